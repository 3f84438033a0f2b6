package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/walkie"
)

// Grader statuses. Only pass lets a round converge; a timeout or a grader
// that could not start is told apart from a failing test run.
const (
	GraderPass    = "pass"
	GraderFail    = "fail"
	GraderTimeout = "timeout"
	GraderError   = "error"
)

// graderTail bounds the part of the grader's output kept in grader.json
// and shown to the implementer.
const graderTail = 4 << 10

// graderKillGrace is how long the grader's process group has between
// SIGTERM and SIGKILL.
const graderKillGrace = 2 * time.Second

// GraderResult is round-N/grader.json.
type GraderResult struct {
	Round      int       `json:"round"`
	Command    string    `json:"command"`
	Workspace  string    `json:"workspace_sha256"` // the frozen state it ran on
	Status     string    `json:"status"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	Signal     string    `json:"signal,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended"`
	DurationMS int64     `json:"duration_ms"`
	Output     string    `json:"output_tail"` // the last 4 KiB of its output
	Log        string    `json:"log"`         // the whole output, relative to the state dir
}

// Passed reports whether the grader passed.
func (g *GraderResult) Passed() bool { return g != nil && g.Status == GraderPass }

// graderCommand expands the placeholders {dir}, {workspace} and {round} in
// the front matter's command and returns the argv to run.
func graderCommand(cmd walkie.Command, dir, copyDir string, round int) []string {
	r := strings.NewReplacer("{dir}", dir, "{workspace}", copyDir, "{round}", strconv.Itoa(round))
	if cmd.Shell != "" {
		return []string{"/bin/sh", "-c", r.Replace(cmd.Shell)}
	}
	argv := make([]string, len(cmd.Argv))
	for i, a := range cmd.Argv {
		argv[i] = r.Replace(a)
	}
	return argv
}

// runGrader runs the grader in copyDir (a copy of the frozen workspace) in
// its own process group, with the controller's environment plus
// WALKIE_DIR, WALKIE_WORKSPACE and WALKIE_ROUND, and ends the whole group
// at the timeout. Its output goes to logPath. A cancelled ctx gives an
// error: the result of an interrupted grader is not a result.
func runGrader(ctx context.Context, argv []string, copyDir, fileDir string, round int, timeout time.Duration, logPath string, started func(pid int)) (GraderResult, error) {
	res := GraderResult{Round: round, Command: strings.Join(argv, " ")}
	out, err := os.Create(logPath)
	if err != nil {
		return res, err
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = copyDir
	cmd.Env = append(os.Environ(), "WALKIE_DIR="+fileDir, "WALKIE_WORKSPACE="+copyDir, "WALKIE_ROUND="+strconv.Itoa(round))
	cmd.Stdin = nil
	// An *os.File as output: the child writes to it directly, so no copier
	// goroutine waits on a grandchild that keeps the descriptor open.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	res.Started = time.Now().UTC().Truncate(time.Millisecond)
	if err := cmd.Start(); err != nil {
		res.Ended = res.Started
		res.Status, res.Detail = GraderError, fmt.Sprintf("could not start: %v", err)
		return res, nil
	}
	pgid := cmd.Process.Pid
	if started != nil {
		started(pgid)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	timedOut, cancelled := false, false
	select {
	case waitErr = <-done:
	case <-timer.C:
		timedOut = true
		waitErr = endGroup(pgid, done)
	case <-ctx.Done():
		cancelled = true
		waitErr = endGroup(pgid, done)
	}
	// Whatever happened, nothing of the grader outlives it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	res.Ended = time.Now().UTC().Truncate(time.Millisecond)
	res.DurationMS = res.Ended.Sub(res.Started).Milliseconds()
	if cancelled {
		return res, fmt.Errorf("grader: %w", context.Cause(ctx))
	}
	var ee *exec.ExitError
	switch {
	case waitErr == nil:
		code := 0
		res.ExitCode, res.Status = &code, GraderPass
	case errors.As(waitErr, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
		} else {
			code := ee.ExitCode()
			res.ExitCode = &code
		}
		res.Status = GraderFail
	default:
		res.Status, res.Detail = GraderError, waitErr.Error()
	}
	if timedOut {
		res.Status, res.Detail = GraderTimeout, fmt.Sprintf("still running after %s; its process group was ended", timeout)
	} else if res.Status == GraderFail {
		res.Detail = "exited with code " + strconv.Itoa(ee.ExitCode())
		if res.Signal != "" {
			res.Detail = "killed by " + res.Signal
		}
	}
	res.Output = tail(logPath, graderTail)
	return res, nil
}

// endGroup sends SIGTERM to the group, waits up to the grace for the
// leader, then SIGKILL.
func endGroup(pgid int, done <-chan error) error {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(graderKillGrace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return <-done
}

// tail returns the last n bytes of a file as text.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(0, fi.Size()-n)
	b, _ := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	// It reaches the implementer inside one argv element: no NUL, and no
	// terminal escapes either.
	s := strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(string(b), ""))
	if off > 0 {
		s = "…" + s
	}
	return s
}

// graderLogPath is where a round's grader output is kept.
func graderLogPath(roundDir string) string { return filepath.Join(roundDir, "grader.log") }

// grade runs the grader on a copy of the frozen workspace, once per round.
func (c *controller) grade(ctx context.Context, round int, fr *Freeze, mf manifest, m *walkie.Meta) (*GraderResult, error) {
	rd := c.roundDir(round)
	var g GraderResult
	if ok, err := readJSON(filepath.Join(rd, "grader.json"), &g); err != nil || (ok && g.Workspace == fr.Workspace) {
		return &g, err
	}
	tmp, err := os.MkdirTemp("", "walkie-grader-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	copyDir := filepath.Join(tmp, "workspace")
	if err := copySnapshot(filepath.Join(rd, "snapshot"), mf, copyDir); err != nil {
		return nil, err
	}
	dir := filepath.Dir(c.file)
	g, err = runGrader(ctx, graderCommand(m.Grader, dir, copyDir, round), copyDir, dir, round, m.GraderLimit(), graderLogPath(rd),
		func(pid int) { c.noteRunning("grader", pid, tmp) })
	c.forgetRunning("grader")
	if err != nil {
		return nil, err
	}
	g.Workspace, g.Log = fr.Workspace, rel(c.dir, graderLogPath(rd))
	if err := writeJSON(filepath.Join(rd, "grader.json"), g); err != nil {
		return nil, err
	}
	c.log.Info("grader ran", zap.Int("round", round), zap.String("status", g.Status), zap.String("detail", g.Detail), zap.Int64("duration_ms", g.DurationMS))
	c.emit(Event{Kind: EventNote, Round: round, Line: fmt.Sprintf("round %d: the grader says %s (%s)", round, g.Status, time.Duration(g.DurationMS)*time.Millisecond)})
	return &g, nil
}
