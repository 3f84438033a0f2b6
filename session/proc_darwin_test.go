package session

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// deathKillsGroup: on macOS the controller's death takes the leader's
// whole group (the watchdog).
const deathKillsGroup = true

var captureKinfo = flag.Bool("capture-kinfo", false, "write the live kernel's kinfo_proc of this test process and its group to testdata/kinfo/captured-*")

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := readProc(pid)
	return err == nil && !st.exited
}

// leftovers lists live processes that are members of one of the given
// sessions or, with children, any child of this test process.
func leftovers(sessions map[int]bool, children bool) []int {
	procs, _ := listSession(0)
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
	ents, err := os.ReadDir("/dev/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestReadProcLive: the kernel's answer for this very process decodes to
// what other system calls say about it.
func TestReadProcLive(t *testing.T) {
	before := time.Now()
	me, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if me.pid != os.Getpid() || me.ppid != os.Getppid() || me.pgrp != syscall.Getpgrp() || me.exited {
		t.Errorf("readProc(self) = %+v; pid %d ppid %d pgrp %d", me, os.Getpid(), os.Getppid(), syscall.Getpgrp())
	}
	started := time.UnixMicro(int64(me.start))
	if started.After(before) || before.Sub(started) > time.Hour {
		t.Errorf("this process started at %s, %s before the test", started, before.Sub(started))
	}
	if _, err := readProc(99999999); !errors.Is(err, errNoProcess) {
		t.Errorf("readProc of a pid beyond PID_MAX: %v, want errNoProcess", err)
	}
	group, err := listGroup(syscall.Getpgrp())
	if err != nil || !groupLive(group, syscall.Getpgrp()) {
		t.Errorf("listGroup(own group) = %+v, %v", group, err)
	}
	procs, err := listSession(0)
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := unix.Getsid(0)
	found := false
	for _, p := range procs {
		found = found || (p.pid == os.Getpid() && p.session == sid)
	}
	if !found {
		t.Errorf("listSession: this process (session %d) is not in the list of %d", sid, len(procs))
	}
}

// TestCaptureKinfo writes fixtures for kinfo_test.go from the live
// kernel, with -capture-kinfo.
func TestCaptureKinfo(t *testing.T) {
	if !*captureKinfo {
		t.Skip("run with -capture-kinfo to write testdata/kinfo/captured-*")
	}
	for name, q := range map[string][]int{"captured-pid": {os.Getpid()}, "captured-pgrp": {syscall.Getpgrp()}} {
		mib := "kern.proc.pid"
		if name == "captured-pgrp" {
			mib = "kern.proc.pgrp"
		}
		b, err := unix.SysctlRaw(mib, q...)
		if err != nil {
			t.Fatal(err)
		}
		procs, err := parseKinfoProcs(b)
		if err != nil {
			t.Fatal(err)
		}
		var want []kinfoWant
		for _, p := range procs {
			want = append(want, wantOf(p))
		}
		js, _ := json.MarshalIndent(want, "", "  ")
		base := filepath.Join("testdata", "kinfo", name)
		if err := os.WriteFile(base+".bin", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(base+".json", append(js, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
