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

// guardGroup: on Linux the parent-death signal (sysProcAttr) is the guard.
func guardGroup(int) (groupGuard, error) { return kernelGuard{}, nil }

// readProc reads /proc/PID/stat.
func readProc(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	// ESRCH: the process went between the open and the read.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procStat{}, fmt.Errorf("%w (%w)", errNoProcess, err)
	}
	if err != nil {
		return procStat{}, err
	}
	st, err := parseStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	st.pid = pid
	return st, nil
}

// listProcs reads every process in /proc. A process that goes while the
// list is read is left out.
func listProcs() ([]procStat, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := make([]procStat, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readProc(pid); err == nil {
			procs = append(procs, st)
		}
	}
	return procs, nil
}

// listSession and listGroup return at least every process of the session
// (group); /proc has no index by either, so both are the whole list.
func listSession(int) ([]procStat, error) { return listProcs() }
func listGroup(int) ([]procStat, error)   { return listProcs() }

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
	// State (field 3): Z is a zombie, X dead.
	st.exited = f[0][0] == 'Z' || f[0][0] == 'X'
	st.ppid, st.pgrp, st.session = num(4), num(5), num(6)
	if err != nil {
		return procStat{}, err
	}
	if st.start, err = strconv.ParseUint(string(f[22-3]), 10, 64); err != nil {
		return procStat{}, fmt.Errorf("malformed /proc stat field 22: %w", err)
	}
	return st, nil
}

// processesWith lists the processes whose environment holds the entry kv
// ("K=V"), as /proc/PID/environ shows it: the environment the process was
// started with. Processes that are not ours cannot be read and are not
// ours to end anyway.
func processesWith(kv string) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := []byte(kv)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for entry := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(entry, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}
