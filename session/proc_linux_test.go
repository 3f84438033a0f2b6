package session

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.state != 'Z' && st.state != 'X'
}

// leftovers lists live processes that are members of one of the given
// sessions or, with children, any child of this test process (only
// meaningful when no other session runs in parallel).
func leftovers(sessions map[int]bool, children bool) []int {
	ents, _ := os.ReadDir("/proc")
	me := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.state == 'Z' || st.state == 'X' {
			continue
		}
		if (children && st.ppid == me) || sessions[st.session] || sessions[pid] {
			out = append(out, pid)
		}
	}
	return out
}

// openFDs counts this process's open file descriptors.
func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

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

func TestParseStat(t *testing.T) {
	line := "4242 (we ird) (name) S 1 4242 4242 34816 4242 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.state != 'S' || st.ppid != 1 || st.pgrp != 4242 || st.session != 4242 || st.startTicks != 987654 {
		t.Errorf("parseStat = %+v", st)
	}
	for _, bad := range []string{"", "1 (x", "1 (x) S 1 2", "1 (x) S a 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

// FuzzParseStat: whatever /proc hands over, parsing fails cleanly or
// yields the fields after the last ")".
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 42 1 2"))
	f.Add([]byte("7 (a) b) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStat(b)
		if err != nil {
			return
		}
		after := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		if sid, _ := strconv.Atoi(string(after[3])); st.state != after[0][0] || st.session != sid {
			t.Fatalf("parseStat(%q) = %+v", b, st)
		}
	})
}

// crashHelperEnv makes the test binary act as a controller that starts a
// session and is then killed with SIGKILL by the test.
const crashHelperEnv = "WALKIE_SESSION_CRASH_HELPER"

// crashHelper starts a session whose leader has a child of its own that
// ignores the SIGHUP of the terminal's hangup (as a daemonised helper
// would), prints the leader's identity, and waits to be killed.
func crashHelper() {
	s, err := Start(context.Background(), Spec{Argv: []string{"sh", "-c", "trap '' HUP; sleep 60 & wait"}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	id, err := Identify(s.Pid())
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println(id.Pid, id.StartTicks)
	s.Wait()
	os.Exit(0)
}

// TestControllerCrash: a controller killed with SIGKILL takes the leader
// with it (Pdeathsig); the leader's own child survives in the group and is
// ended by KillStale from the recorded identity, as a restarted
// controller does.
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
	// The leader's background sleep: a member of the group led by id.Pid.
	var member int
	eventually(t, 5*time.Second, "the leader's child running", func() bool {
		for _, pid := range leftovers(map[int]bool{id.Pid: true}, false) {
			if pid != id.Pid {
				member = pid
				return true
			}
		}
		return false
	})
	cmd.Process.Kill()
	cmd.Wait()

	eventually(t, 5*time.Second, "leader killed by Pdeathsig", func() bool { return !alive(id.Pid) })
	if !alive(member) {
		t.Fatalf("the group member died with the leader; the test shows nothing about KillStale")
	}
	if err := KillStale(id); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "group member killed by KillStale", func() bool { return !alive(member) })
}
