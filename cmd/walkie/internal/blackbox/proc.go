package blackbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Result is a finished command.
type Result struct {
	Code           int // its exit code; -1 when a signal ended it
	Stdout, Stderr string
	Took           time.Duration
}

// Proc is a command running in the background, its output kept.
type Proc struct {
	Cmd *exec.Cmd
	t   testing.TB

	mu             sync.Mutex // guards stdout and stderr while it runs
	stdout, stderr bytes.Buffer
	done           chan struct{}
	res            Result // set before done is closed
	raceOnce       sync.Once
	waited         atomic.Bool // Wait returned its result to the test
}

// Runner runs one binary for one test: every command in Dir with
// exactly Env as its environment.
type Runner struct {
	T     testing.TB
	Bin   string
	Dir   string
	Env   []string
	Limit time.Duration // how long Run and MustRun let a command run
}

// command is the binary with args, as the runner runs it.
func (r Runner) command(args ...string) *exec.Cmd {
	cmd := exec.Command(r.Bin, args...)
	cmd.Dir, cmd.Env = r.Dir, r.Env
	return cmd
}

// Start starts the binary without waiting for it. The test's end kills
// it if it still runs and, if the test failed, shows the output of one the
// test never waited for (a server it killed or left running).
func (r Runner) Start(args ...string) *Proc {
	r.T.Helper()
	p := start(r.T, r.command(args...))
	r.T.Cleanup(func() {
		p.End()
		if r.T.Failed() && !p.waited.Load() {
			r.T.Logf("%s:\n%s", commandLine(p.Cmd), p.Output())
		}
	})
	return p
}

// Run runs the binary to its end; past Limit it is killed and the test
// fails.
func (r Runner) Run(args ...string) Result {
	r.T.Helper()
	return start(r.T, r.command(args...)).Wait(r.Limit)
}

// MustRun runs the binary to its end and fails the test unless it exits
// with code.
func (r Runner) MustRun(code int, args ...string) Result {
	r.T.Helper()
	res := r.Run(args...)
	if res.Code != code {
		r.T.Fatalf("%s %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", filepath.Base(r.Bin), strings.Join(args, " "), res.Code, code, res.Stdout, res.Stderr)
	}
	return res
}

// Env is what every walkie a test starts has in its environment besides
// the rest: path first on PATH (the binaries built for the run, or the
// real CLIs), the test's marker, and GORACE telling a race-enabled binary
// not to sleep a second at exit.
func Env(path string, m Marker) []string {
	return []string{
		"PATH=" + path + string(os.PathListSeparator) + os.Getenv("PATH"),
		m.Env(),
		"GORACE=atexit_sleep_ms=0 " + os.Getenv("GORACE"),
	}
}

// start starts cmd without waiting for it, its output kept.
func start(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{Cmd: cmd, t: t, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = lockedWriter{&p.mu, &p.stdout}, lockedWriter{&p.mu, &p.stderr}
	// A process it left behind may hold its output open: once it has
	// exited, its result must not wait for that one.
	cmd.WaitDelay = 2 * time.Second
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		res := Result{Code: cmd.ProcessState.ExitCode(), Stdout: p.stdout.String(), Stderr: p.stderr.String(), Took: time.Since(started)}
		p.mu.Unlock()
		var ee *exec.ExitError
		switch {
		case errors.Is(err, exec.ErrWaitDelay):
			res.Stderr += "\n(its output was still held open by another process after it exited)"
		case err != nil && !errors.As(err, &ee):
			res.Code = -1
			res.Stderr += "\n(wait: " + err.Error() + ")"
		}
		p.res = res // read only once done is closed
		close(p.done)
	}()
	return p
}

// Wait waits for the command; past limit it kills it and fails the test.
// A race the race detector reported in its output fails the test too.
func (p *Proc) Wait(limit time.Duration) Result {
	p.t.Helper()
	p.waited.Store(true)
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.Cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("%s still running after %s\nstderr:\n%s", commandLine(p.Cmd), limit, p.res.Stderr)
	}
	p.checkRace()
	return p.res
}

// Kill SIGKILLs the command, which must still run, and waits for it.
func (p *Proc) Kill() Result {
	p.t.Helper()
	p.Signal(syscall.SIGKILL)
	return p.End()
}

// End kills the command if it still runs and waits for it: for a
// server the test leaves running until its end.
func (p *Proc) End() Result {
	p.t.Helper()
	_ = p.Cmd.Process.Kill()
	<-p.done
	p.checkRace()
	return p.res
}

func (p *Proc) checkRace() {
	p.t.Helper()
	if out := p.res.Stdout + p.res.Stderr; strings.Contains(out, "DATA RACE") {
		p.raceOnce.Do(func() { p.t.Errorf("%s: the race detector fired:\n%s", commandLine(p.Cmd), out) })
	}
}

// Done is closed when the command has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited returns the command's result once it has ended.
func (p *Proc) Exited() (Result, bool) {
	select {
	case <-p.done:
		return p.res, true
	default:
		return Result{}, false
	}
}

// Stderr is what the command has written to stderr so far.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Output is what the command has written so far, stdout then stderr.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String() + p.stderr.String()
}

// Signal sends sig to the command, failing the test if it cannot (the
// command has ended).
func (p *Proc) Signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// WaitSaid waits until the command's stderr holds s n times; it returns
// an error saying so if the command ends or limit passes first.
func (p *Proc) WaitSaid(s string, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for strings.Count(p.Stderr(), s) < n {
		if r, ok := p.Exited(); ok {
			return fmt.Errorf("%s exited %d before saying %q %d times\nstderr:\n%s", commandLine(p.Cmd), r.Code, s, n, r.Stderr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %q not said %d times\nstderr:\n%s", limit, s, n, p.Stderr())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// commandLine names a command in a failure: "walkie auto d.walkie.md".
func commandLine(cmd *exec.Cmd) string {
	return strings.Join(append([]string{filepath.Base(cmd.Path)}, cmd.Args[1:]...), " ")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
