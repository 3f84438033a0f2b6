package session

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
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

// statSize holds any /proc/PID/stat line: 52 numeric fields of at most
// 20 digits each and a command name of at most 64 bytes, with room to
// spare (a line too long would leave a process out of a sweep).
const statSize = 4096

// readProc reads /proc/PID/stat. It is called for every process a session
// leaves, at every session's end, so it reads with plain system calls
// into a buffer on the stack: os.ReadFile costs nine calls (the poller
// tries and fails to take the descriptor) where four do.
func readProc(pid int) (procStat, error) {
	var buf [statSize]byte
	n, err := readSmall("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	// ESRCH: the process went between the open and the read.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procStat{}, fmt.Errorf("%w (%w)", errNoProcess, err)
	}
	if err != nil {
		return procStat{}, err
	}
	st, err := parseStat(buf[:n])
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	st.pid = pid
	return st, nil
}

// readSmall reads the whole of a small file into buf; a file longer than
// buf is an error.
func readSmall(path string, buf []byte) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		k, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if k == 0 {
			return n, nil
		}
		n += k
	}
	return 0, &fs.PathError{Op: "read", Path: path, Err: errors.New("longer than expected")}
}

// pids lists the processes in /proc, unsorted.
func pids() ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(names))
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// listProcs reads every process in /proc. A process that goes while the
// list is read is left out.
func listProcs() ([]procStat, error) {
	return listWhere(func(int) bool { return true })
}

// listWhere reads the processes in /proc for which keep holds, leaving
// out those that go meanwhile.
func listWhere(keep func(pid int) bool) ([]procStat, error) {
	all, err := pids()
	if err != nil {
		return nil, err
	}
	var procs []procStat
	for _, pid := range all {
		if !keep(pid) {
			continue
		}
		if st, err := readProc(pid); err == nil {
			procs = append(procs, st)
		}
	}
	return procs, nil
}

// listSession and listGroup return at least every process of the session
// (group). /proc has no index by either, and every session's end asks, so
// each process is first asked with getsid(2) or getpgid(2), one system
// call without a file, and only the members are read in full. Linux
// answers both for any pid; a process that is gone gives ESRCH and is
// left out.
func listSession(sid int) ([]procStat, error) {
	return listWhere(func(pid int) bool { s, err := unix.Getsid(pid); return err == nil && s == sid })
}

func listGroup(pgid int) ([]procStat, error) {
	return listWhere(func(pid int) bool { g, err := unix.Getpgid(pid); return err == nil && g == pgid })
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
	all, err := pids()
	if err != nil {
		return nil, err
	}
	want := []byte(kv)
	var found []int
	for _, pid := range all {
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			continue
		}
		for entry := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(entry, want) {
				found = append(found, pid)
				break
			}
		}
	}
	return found, nil
}

// sessionAncestor finds the nearest ancestor of this process whose
// environment (as it was started) carries SessionVar: the agent's own
// process, whatever its descendants did to theirs. An ancestor whose
// environment cannot be read (walkie's, undumpable) is passed over.
func sessionAncestor() (pid int, id string, ok bool) {
	seen := map[int]bool{}
	for pid = os.Getppid(); pid > 1 && !seen[pid]; {
		seen[pid] = true
		if env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ"); err == nil {
			for entry := range bytes.SplitSeq(env, []byte{0}) {
				if v, found := bytes.CutPrefix(entry, []byte(SessionVar+"=")); found {
					return pid, string(v), true
				}
			}
		}
		st, err := readProc(pid)
		if err != nil {
			return 0, "", false
		}
		pid = st.ppid
	}
	return 0, "", false
}
