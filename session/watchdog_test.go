//go:build unix

package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// watchdogShells are the shells the watchdog's script must work in:
// /bin/sh is the one it runs; macOS's /bin/sh is bash in POSIX mode by
// default and may be switched to dash or zsh, so each present here is
// tried too (run as "sh", as the watchdog runs them).
func watchdogShells(t *testing.T) []string {
	shells := []string{watchdogShell}
	seen := map[string]bool{}
	for _, sh := range []string{watchdogShell, "/bin/bash", "/bin/dash", "/bin/zsh", "/usr/bin/zsh"} {
		if real, err := filepath.EvalSymlinks(sh); err == nil && !seen[real] {
			seen[real] = true
			if sh != watchdogShell {
				shells = append(shells, sh)
			}
		}
	}
	t.Logf("shells: %v", shells)
	return shells
}

// group is a process group started by a test: `sleep 60` as the leader
// of a new session. exited is closed once the leader has been reaped,
// with err its Wait error.
type group struct {
	pid    int
	exited chan struct{}
	err    error
}

func startGroup(t *testing.T) *group {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &group{pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() { g.err = cmd.Wait(); close(g.exited) }()
	t.Cleanup(func() {
		_ = signalGroup(g.pid, syscall.SIGKILL)
		<-g.exited
	})
	return g
}

// killedWithin fails unless the group's leader dies of SIGKILL within the
// limit.
func (g *group) killedWithin(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-g.exited:
		var ee *exec.ExitError
		if !errors.As(g.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("the group's leader ended with %v, want SIGKILL", g.err)
		}
	case <-time.After(limit):
		t.Fatalf("the group is still alive %s after the controller's end", limit)
	}
}

// stillAlive fails if the group's leader dies within a short window: a
// kill the watchdog sent before it exited would have landed by then.
func (g *group) stillAlive(t *testing.T) {
	t.Helper()
	select {
	case <-g.exited:
		t.Fatalf("the group's leader died (%v) though the watchdog was stood down", g.err)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestWatchdogStandsDown: a session that ends normally releases its
// watchdog, which exits without touching the group.
func TestWatchdogStandsDown(t *testing.T) {
	for _, sh := range watchdogShells(t) {
		t.Run(filepath.Base(sh), func(t *testing.T) {
			g := startGroup(t)
			wd, err := startWatchdog(sh, g.pid)
			if err != nil {
				t.Fatal(err)
			}
			if err := wd.release(); err != nil {
				t.Fatalf("release: %v", err)
			}
			if err := syscall.Kill(wd.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("the watchdog is still there after release (kill 0: %v)", err)
			}
			g.stillAlive(t)
		})
	}
}

// TestWatchdogFires: the end of the pipe without the line (what the kernel
// does when the controller dies) kills the whole group.
func TestWatchdogFires(t *testing.T) {
	for _, sh := range watchdogShells(t) {
		t.Run(filepath.Base(sh), func(t *testing.T) {
			g := startGroup(t)
			wd, err := startWatchdog(sh, g.pid)
			if err != nil {
				t.Fatal(err)
			}
			wd.standDown.Close()
			g.killedWithin(t, 5*time.Second)
			if err := wd.cmd.Wait(); err != nil {
				t.Errorf("watchdog: %v (its kill failed?)", err)
			}
		})
	}
}

// TestWatchdogControllerKilled: a real controller process holding the
// watchdog is killed with SIGKILL; the group it guarded dies too.
func TestWatchdogControllerKilled(t *testing.T) {
	for _, sh := range watchdogShells(t) {
		t.Run(filepath.Base(sh), func(t *testing.T) {
			g := startGroup(t)
			ctl := exec.Command(os.Args[0], "-test.run=^$")
			ctl.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%s", watchdogHelperEnv, g.pid, sh))
			out, err := ctl.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := ctl.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if !strings.HasPrefix(line, "ready") {
				ctl.Process.Kill()
				ctl.Wait()
				t.Fatalf("controller helper: %q, %v", line, err)
			}
			g.stillAlive(t)
			ctl.Process.Kill()
			ctl.Wait()
			g.killedWithin(t, 5*time.Second)
		})
	}
}

// TestWatchdogNotInherited: the write end stays with the controller. A
// session started after the watchdog (its agent forked while the pipe was
// open) must not hold it, or the watchdog would never see the end.
func TestWatchdogNotInherited(t *testing.T) {
	g := startGroup(t)
	wd, err := startWatchdog(watchdogShell, g.pid)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	later, err := Start(ctx, Spec{Argv: []string{"sleep", "60"}, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); later.Wait() }()
	wd.standDown.Close()
	g.killedWithin(t, 5*time.Second)
	_ = wd.cmd.Wait()
}

func TestStartWatchdogErrors(t *testing.T) {
	for _, pgid := range []int{0, 1, -5} {
		if _, err := startWatchdog(watchdogShell, pgid); err == nil {
			t.Errorf("startWatchdog(%d) succeeded: it would kill the caller's group or everything", pgid)
		}
	}
	if _, err := startWatchdog("/nonexistent/sh", 4242); err == nil || !strings.Contains(err.Error(), "/nonexistent/sh") {
		t.Errorf("missing shell: err = %v, want it named", err)
	}
}
