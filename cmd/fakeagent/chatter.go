package main

import (
	"bufio"
	"fmt"
	"strings"
)

// chatter prints what an agent CLI shows while it works: a window title
// (OSC), colours, and a spinner redrawn in place with "\r" and erase-line.
func chatter(out *bufio.Writer, lines int, file string) {
	frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	fmt.Fprint(out, "\x1b]0;fakeagent\x07")
	for i := 0; i < lines; i++ {
		for j := 0; j < 3; j++ {
			fmt.Fprintf(out, "\r\x1b[2K\x1b[36m%s\x1b[0m Thinking…", frames[(i*3+j)%len(frames)])
		}
		fmt.Fprintf(out, "\r\x1b[2K\x1b[32m✓\x1b[0m \x1b[1mstep %d\x1b[22m: read %s\n", i+1, file)
	}
}

// flood prints n bytes of numbered text lines, the same bytes every time so
// a benchmark can compare against a saved copy.
func flood(out *bufio.Writer, n int64) {
	line := []byte(strings.Repeat("lorem ipsum dolor sit amet ", 3) + "\n")
	var written int64
	for i := 0; written < n; i++ {
		head := fmt.Sprintf("flood %09d: ", i)
		rest := line
		if remaining := n - written; remaining < int64(len(head)+len(rest)) {
			all := append([]byte(head), rest...)[:remaining]
			out.Write(all)
			written += remaining
			break
		}
		out.WriteString(head)
		out.Write(rest)
		written += int64(len(head) + len(rest))
	}
}
