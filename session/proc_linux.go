package session

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr returns the attributes pty.StartWithSize completes with
// Setsid and Setctty (Setpgid must stay unset: setsid already makes the
// child a group leader, and setpgid after setsid fails with EPERM).
//
// Pdeathsig kills the leader if the controller dies without ending it (for
// example on SIGKILL). Linux ties it to the thread that forked, not the
// process: it fires when that thread exits. The Go runtime only ever exits a
// thread when a goroutine locked to it with LockOSThread returns, so Start
// forks from a fresh goroutine (never locked) and the signal fires only when
// the whole controller dies. It reaches the leader only; descendants are
// ended by KillStale when the controller restarts.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// ProcIdentity names a process across pid reuse: the pid plus its start
// time in clock ticks since boot (field 22 of /proc/PID/stat). A controller
// records it when a session starts so that, after a crash, it ends that
// process group and nothing else.
type ProcIdentity struct {
	Pid        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// Identify reads the identity of a running process.
func Identify(pid int) (ProcIdentity, error) {
	st, err := readStat(pid)
	if err != nil {
		return ProcIdentity{}, err
	}
	return ProcIdentity{Pid: pid, StartTicks: st.startTicks}, nil
}

// KillStale sends SIGKILL to the process group (and any process still in
// the session) led by id, left behind by a controller that died. If the pid
// is alive with a different start time it was reused by an unrelated
// process, and nothing is signalled. If the leader is gone but members of
// its group or session remain, they are ours: Linux does not hand out a pid
// that is still in use as a group or session id. A group already gone is
// not an error.
func KillStale(id ProcIdentity) error {
	if id.Pid <= 1 {
		return fmt.Errorf("kill stale: invalid pid %d", id.Pid)
	}
	st, err := readStat(id.Pid)
	switch {
	case err == nil && st.startTicks != id.StartTicks:
		return nil // pid reused: not ours
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := signalGroup(id.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill stale: %w", err)
	}
	// A member that moved to another group inside the session (setpgid)
	// escaped the group kill; find it by session id.
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("kill stale: %w", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.session == id.Pid {
			_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: it went by itself
		}
	}
	return nil
}

// groupGone reports whether the process group has no live member left.
// Zombies count as gone: they hold nothing open, and one whose parent is
// slow to reap it (an init that never does, in some containers) must not
// hold up the session.
func groupGone(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			return false
		}
	}
	return true
}

// procStat holds the fields of /proc/PID/stat this package uses.
type procStat struct {
	state               byte // R, S, D, Z (zombie), X (dead), …
	ppid, pgrp, session int
	startTicks          uint64
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, fmt.Errorf("identify pid %d: %w", pid, err)
	}
	st, err := parseStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("identify pid %d: %w", pid, err)
	}
	return st, nil
}

// parseStat parses /proc/PID/stat. The command name (field 2) is in
// parentheses and may itself contain spaces and ")", so fields are counted
// from the last ")".
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed /proc stat: no ')'")
	}
	// After ")": field 3 (state) is f[0], so field n is f[n-3].
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("malformed /proc stat: %d fields after comm", len(f))
	}
	var st procStat
	var err error
	num := func(n int) int {
		v, e := strconv.Atoi(string(f[n-3]))
		if e != nil && err == nil {
			err = fmt.Errorf("malformed /proc stat field %d: %w", n, e)
		}
		return v
	}
	st.state = f[0][0]
	st.ppid, st.pgrp, st.session = num(4), num(5), num(6)
	if err != nil {
		return procStat{}, err
	}
	if st.startTicks, err = strconv.ParseUint(string(f[22-3]), 10, 64); err != nil {
		return procStat{}, fmt.Errorf("malformed /proc stat field 22: %w", err)
	}
	return st, nil
}
