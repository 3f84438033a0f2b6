//go:build unix && !linux

package session

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

// TestSessionReleasesWatchdog: where the watchdog is the guard, every
// session starts one and ends with it released and reaped: nothing of it
// is left as a child of the controller.
func TestSessionReleasesWatchdog(t *testing.T) {
	s, err := Start(context.Background(), Spec{Argv: []string{"true"}, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Wait()
	if r.Ending != EndExited || r.ExitCode != 0 || r.Detail != "exit code 0" {
		t.Fatalf("result %+v", r)
	}
	wd, ok := s.guard.(*watchdog)
	if !ok {
		t.Fatalf("the session's guard is %T, want the watchdog", s.guard)
	}
	if err := syscall.Kill(wd.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("watchdog pid %d still there after the session: %v", wd.cmd.Process.Pid, err)
	}
}
