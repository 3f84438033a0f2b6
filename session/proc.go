package session

import (
	"errors"
	"slices"
)

// ProcIdentity names a process across pid reuse: the pid plus its start
// time as the kernel reports it. A controller records it when a session
// starts so that, after a crash, it ends that process group and nothing
// else.
//
// StartTicks is only ever compared with what the same kernel reports
// later: on Linux it is clock ticks since boot (field 22 of
// /proc/PID/stat), on macOS microseconds since the Unix epoch (the
// p_starttime of sysctl kern.proc.pid).
type ProcIdentity struct {
	Pid        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// procStat is what this package needs to know about one process. Linux
// reads it from /proc; macOS from sysctl kern.proc (kinfo.go).
type procStat struct {
	pid, ppid, pgrp int
	// session is the session id. macOS's kinfo_proc does not carry it;
	// there it is filled in (by getsid) only where a caller needs it.
	session int
	start   uint64 // see ProcIdentity.StartTicks
	// exited: a zombie (or dead). It holds nothing open and only waits
	// for its parent to reap it.
	exited bool
}

// errNoProcess: the kernel knows no process, not even a zombie, by that
// pid.
var errNoProcess = errors.New("no such process")

// ours decides whether the process group recorded as id may be ended now,
// given what the kernel says about id.Pid (cur, or the error reading it).
// A pid alive with another start time was reused by an unrelated process.
// A leader that is gone leaves its group and session ours: neither Linux
// nor macOS hands out a pid that is still in use as a process group or
// session id, so whatever still carries that id is what the session left.
func ours(id ProcIdentity, cur procStat, err error) (bool, error) {
	switch {
	case errors.Is(err, errNoProcess):
		return true, nil
	case err != nil:
		return false, err
	default:
		return cur.start == id.StartTicks, nil
	}
}

// sessionMembers lists the live processes of procs in session sid, the
// leader excepted: those that moved to a group of their own (setpgid)
// escape a kill of the leader's group.
func sessionMembers(procs []procStat, sid int) []int {
	var pids []int
	for _, p := range procs {
		if p.session == sid && p.pid != sid && !p.exited {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// groupLive reports whether procs hold a live member of group pgid.
// Zombies count as gone: they hold nothing open, and one whose parent is
// slow to reap it (an init that never does, in some containers) must not
// hold up the session.
func groupLive(procs []procStat, pgid int) bool {
	return slices.ContainsFunc(procs, func(p procStat) bool { return p.pgrp == pgid && !p.exited })
}

// groupGuard ends a session's process group if the controller dies while
// the session runs; release stands it down once the session has ended.
type groupGuard interface {
	release() error
}

// kernelGuard is the guard when the kernel does the job itself (Linux's
// parent-death signal, see sysProcAttr): nothing to release.
type kernelGuard struct{}

func (kernelGuard) release() error { return nil }
