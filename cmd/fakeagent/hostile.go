package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// A hostile agent tries to reach what its sandbox should keep from it:
// try_read reads each path, try_write appends a line to each (creating
// it if it has to), and every attempt prints one line the tests read
// back:
//
//	fakeagent: read PATH: refused: open PATH: permission denied
//	fakeagent: write PATH: ALLOWED (13 bytes)
//
// "refused" is printed with the error itself, as a tool would print it,
// so walkie's record of what the session reported refused names the
// path. {agent}, {turn}, {round} and {ppid} (the parent's pid: walkie,
// when the agent is the session's first process) are filled in, then
// $VARIABLES from the environment. The attempts never fail the agent:
// it goes on to its behavior, as a prompt-injected agent would.

// forged is what try_write appends: a line that would pass for a state
// or log entry if it got in.
const forged = `{"forged_by":"fakeagent","status":"open","extra_rounds":99}` + "\n"

func (a *agent) tryAll(out *bufio.Writer) {
	for _, p := range a.step.TryRead {
		p = a.expand(p)
		n, err := readAll(p)
		report(out, "read", p, n, err)
	}
	for _, p := range a.step.TryWrite {
		p = a.expand(p)
		n, err := appendLine(p)
		report(out, "write", p, n, err)
	}
	out.Flush()
}

func (a *agent) expand(p string) string {
	return os.ExpandEnv(strings.ReplaceAll(a.fill(p), "{ppid}", strconv.Itoa(os.Getppid())))
}

func readAll(p string) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.Copy(io.Discard, f)
}

func appendLine(p string) (int64, error) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := f.WriteString(forged)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return int64(n), err
}

func report(out *bufio.Writer, op, p string, n int64, err error) {
	if err != nil {
		fmt.Fprintf(out, "fakeagent: %s %s: refused: %v\n", op, p, err)
		return
	}
	fmt.Fprintf(out, "fakeagent: %s %s: ALLOWED (%d bytes)\n", op, p, n)
}
