//go:build linux || darwin

package session

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

func TestIdentifyAndKillStale(t *testing.T) {
	t.Parallel()
	s, err := Start(context.Background(), Spec{Argv: []string{"sh", "-c", "sleep 60 & sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := Identify(s.Pid())
	if err != nil || id.Pid != s.Pid() || id.StartTicks == 0 {
		t.Fatalf("Identify = %+v, %v", id, err)
	}
	// A pid reused by another process (different start time) is left alone.
	if err := KillStale(ProcIdentity{Pid: id.Pid, StartTicks: id.StartTicks + 1}); err != nil {
		t.Fatal(err)
	}
	if !alive(id.Pid) {
		t.Fatal("KillStale killed a process whose start time differs")
	}
	if err := KillStale(id); err != nil {
		t.Fatal(err)
	}
	r := s.Wait()
	want(t, r, EndExited, EndedBySelf, -1, "SIGKILL")
	if r.Detail != "killed by SIGKILL" {
		t.Errorf("Detail = %q", r.Detail)
	}
	// Gone already: not an error.
	if err := KillStale(id); err != nil {
		t.Errorf("KillStale of a finished group: %v", err)
	}
	if _, err := Identify(id.Pid); err == nil {
		t.Errorf("Identify of a reaped pid succeeded")
	}
}

// members returns the live processes of session sid other than its
// leader, as KillStale finds them.
func members(t testing.TB, sid int) []procStat {
	t.Helper()
	procs, err := listSession(sid)
	if err != nil {
		t.Fatal(err)
	}
	var out []procStat
	for _, p := range procs {
		if p.session == sid && p.pid != sid && !p.exited {
			out = append(out, p)
		}
	}
	return out
}

// TestControllerCrash: a controller killed with SIGKILL takes the leader
// with it (Linux: Pdeathsig; macOS: the watchdog, which takes the leader's
// whole group). A child that moved to a group of its own escapes both, as
// does, on Linux, one in the leader's group that ignores SIGHUP; KillStale
// from the recorded identity ends them, as a restarted controller does.
func TestControllerCrash(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var id ProcIdentity
	if _, err := fmt.Fscan(out, &id.Pid, &id.StartTicks); err != nil {
		cmd.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	var inGroup, ownGroup int
	sessiontest.WaitFor(t, 5*time.Second, "the leader's two children running", func() bool {
		inGroup, ownGroup = 0, 0
		for _, p := range members(t, id.Pid) {
			if p.pgrp == id.Pid {
				inGroup = p.pid
			} else {
				ownGroup = p.pid
			}
		}
		return inGroup != 0 && ownGroup != 0
	})
	cmd.Process.Kill()
	cmd.Wait()

	sessiontest.WaitFor(t, 5*time.Second, "leader killed with the controller", func() bool { return !alive(id.Pid) })
	if deathKillsGroup {
		sessiontest.WaitFor(t, 5*time.Second, "the leader's group killed by the watchdog", func() bool { return !alive(inGroup) })
	} else if !alive(inGroup) {
		t.Fatalf("the group member died with the leader; the test shows nothing about KillStale")
	}
	if !alive(ownGroup) {
		t.Fatalf("the child in its own group died with the leader; the test shows nothing about KillStale")
	}
	if err := KillStale(id); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, 5*time.Second, "session members killed by KillStale", func() bool { return !alive(inGroup) && !alive(ownGroup) })
}
