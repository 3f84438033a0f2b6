package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Round-table stand-ins: an implementer that changes its workspace (shell)
// and a reviewer that writes a verdict file (the verdict behaviour).

// perRound picks the round's entry of list (the last repeats), or one.
func perRound(one string, list []string, round int) string {
	if n := len(list); n > 0 {
		return list[min(round, n)-1]
	}
	return one
}

func (a *agent) fill(s string) string {
	return strings.NewReplacer("{agent}", a.opts.agent, "{turn}", strconv.Itoa(a.turn), "{round}", strconv.Itoa(a.round)).Replace(s)
}

// runShell runs the round's shell snippet, its output to the terminal.
func (a *agent) runShell(ctx context.Context, out *bufio.Writer) error {
	snippet := perRound(a.step.Shell, a.step.Shells, a.round)
	if snippet == "" {
		return nil
	}
	out.Flush()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", a.fill(snippet))
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	out.Flush()
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	return nil
}

// runBodyCmd runs the round's body_cmd snippet (like shell), whose
// standard output, trailing newlines cut, is the turn's body.
func (a *agent) runBodyCmd(ctx context.Context) error {
	snippet := perRound(a.step.BodyCmd, a.step.BodyCmds, a.round)
	if snippet == "" {
		return nil
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", a.fill(snippet))
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("body_cmd: %w", err)
	}
	body := strings.TrimRight(string(b), "\n")
	a.cmdBody = &body
	return nil
}

// writeVerdict writes the round's verdict text in one write.
func (a *agent) writeVerdict() error {
	path := a.step.VerdictFile
	if path == "" {
		path = os.Getenv("WALKIE_VERDICT")
	}
	if path == "" {
		return errors.New("verdict: no verdict_file and no $WALKIE_VERDICT")
	}
	v := perRound(a.step.Verdict, a.step.Verdicts, a.round)
	if v == "" {
		v = `{"verdict": "approve", "objections": []}`
	}
	return os.WriteFile(path, []byte(a.fill(v)+"\n"), 0o644)
}
