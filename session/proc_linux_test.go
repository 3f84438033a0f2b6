package session

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// deathKillsGroup: on Linux the controller's death takes the leader alone
// (Pdeathsig); the rest of the group waits for KillStale.
const deathKillsGroup = false

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := readProc(pid)
	return err == nil && !st.exited
}

// leftovers lists live processes that are members of one of the given
// sessions or, with children, any child of this test process (only
// meaningful when no other session runs in parallel).
func leftovers(sessions map[int]bool, children bool) []int {
	procs, _ := listProcs()
	me := os.Getpid()
	var out []int
	for _, st := range procs {
		if st.exited {
			continue
		}
		if (children && st.ppid == me) || sessions[st.session] || sessions[st.pid] {
			out = append(out, st.pid)
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

func TestParseStat(t *testing.T) {
	line := "4242 (we ird) (name) S 1 4242 4242 34816 4242 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st.exited || st.ppid != 1 || st.pgrp != 4242 || st.session != 4242 || st.start != 987654 {
		t.Errorf("parseStat = %+v", st)
	}
	for _, state := range []string{"Z", "X"} {
		if st, err := parseStat([]byte("7 (a) " + state + " 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0")); err != nil || !st.exited {
			t.Errorf("state %s: parseStat = %+v, %v; want exited", state, st, err)
		}
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
		state := after[0][0]
		if sid, _ := strconv.Atoi(string(after[3])); st.exited != (state == 'Z' || state == 'X') || st.session != sid {
			t.Fatalf("parseStat(%q) = %+v", b, st)
		}
	})
}

// TestListSessionAndGroup: the getsid/getpgid filter finds the process
// a session's leader left behind, and nothing of another session.
func TestListSessionAndGroup(t *testing.T) {
	// A new session whose leader exits (and is reaped) at once, leaving a
	// child in the same session and group.
	cmd := exec.Command("sh", "-c", "sleep 30 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("child pid %q: %v", out, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	sid := cmd.Process.Pid
	pids := func(procs []procStat, err error) []int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, p := range procs {
			out = append(out, p.pid)
		}
		return out
	}
	if got := pids(listSession(sid)); !slices.Equal(got, []int{child}) {
		t.Errorf("listSession(%d) = %v, want [%d]", sid, got, child)
	}
	if got := pids(listGroup(sid)); !slices.Equal(got, []int{child}) {
		t.Errorf("listGroup(%d) = %v, want [%d]", sid, got, child)
	}
	own, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := listSession(own)
	if err != nil || !slices.ContainsFunc(mine, func(p procStat) bool { return p.pid == os.Getpid() }) || slices.ContainsFunc(mine, func(p procStat) bool { return p.pid == child }) {
		t.Errorf("listSession(own session) = %+v, %v: want this process and not %d", mine, err, child)
	}
}
