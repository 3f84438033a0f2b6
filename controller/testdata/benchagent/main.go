// Command benchagent is the cheapest agent the controller's benchmark can
// run, so that what it measures is the controller: it notes when it
// started, appends a trivial turn, and notes when it is about to exit.
//
//	benchagent FILE AGENT TURN TIMES
//
// TIMES gets one line per run: start and exit, in Unix nanoseconds.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	start := time.Now().UnixNano()
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: benchagent FILE AGENT TURN TIMES")
		os.Exit(2)
	}
	file, agent, turn, times := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	if err := appendTo(file, fmt.Sprintf("\n## Turn %s · %s\nA trivial turn.\n", turn, agent)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := appendTo(times, fmt.Sprintf("%d %d\n", start, time.Now().UnixNano())); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func appendTo(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
