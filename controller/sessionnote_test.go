package controller

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// startLeader starts a session leader that does not carry the session's
// variable (as an agent that scrubbed its environment would leave it), so
// that only its recorded identity can find it. The channel gets the
// signal that ended it.
func startLeader(t *testing.T) (*exec.Cmd, <-chan syscall.Signal) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan syscall.Signal, 1)
	go func() {
		_ = cmd.Wait()
		ended <- cmd.ProcessState.Sys().(syscall.WaitStatus).Signal()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, ended
}

// The next controller ends a dead one's session by the process its note
// names, and never by a note another attempt left.
func TestEndSessionUsesTheAttemptsNote(t *testing.T) {
	dir := t.TempDir()
	const id = "0123456789abcdef"
	for _, tc := range []struct {
		name   string
		noteOf string
		ended  bool
	}{{"this attempt's note", id, true}, {"another attempt's note", "fedcba9876543210", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, ended := startLeader(t)
			who, err := session.Identify(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			if err := walkie.NoteSession(dir, walkie.SessionNote{Session: tc.noteOf, Pid: who.Pid, StartTicks: who.StartTicks}); err != nil {
				t.Fatal(err)
			}
			if err := endSession(dir, &walkie.Attempt{Session: id}); err != nil {
				t.Fatal(err)
			}
			// A SIGTERM from here: whichever signal ended it says whether
			// endSession had already killed it.
			_ = cmd.Process.Signal(syscall.SIGTERM)
			want := map[bool]syscall.Signal{true: syscall.SIGKILL, false: syscall.SIGTERM}[tc.ended]
			select {
			case got := <-ended:
				if got != want {
					t.Fatalf("the leader was ended by %v, want %v", got, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the leader is still running")
			}
		})
	}
}
