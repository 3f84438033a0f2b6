//go:build linux || darwin

package session

import (
	"errors"
	"fmt"
	"syscall"
)

// Identify reads the identity of a running process.
func Identify(pid int) (ProcIdentity, error) {
	st, err := readProc(pid)
	if err != nil {
		return ProcIdentity{}, fmt.Errorf("identify pid %d: %w", pid, err)
	}
	return ProcIdentity{Pid: pid, StartTicks: st.start}, nil
}

// KillStale sends SIGKILL to the process group (and any process still in
// the session) led by id, left behind by a controller that died. If the pid
// is alive with a different start time it was reused by an unrelated
// process, and nothing is signalled. If the leader is gone but members of
// its group or session remain, they are ours (see ours). A group already
// gone is not an error.
func KillStale(id ProcIdentity) error {
	if id.Pid <= 1 {
		return fmt.Errorf("kill stale: invalid pid %d", id.Pid)
	}
	cur, err := readProc(id.Pid)
	mine, err := ours(id, cur, err)
	if err != nil {
		return fmt.Errorf("kill stale: pid %d: %w", id.Pid, err)
	}
	if !mine {
		return nil
	}
	if err := signalGroup(id.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill stale: %w", err)
	}
	// A member that moved to another group inside the session (setpgid)
	// escaped the group kill; find it by session id.
	procs, err := listSession(id.Pid)
	if err != nil {
		return fmt.Errorf("kill stale: %w", err)
	}
	for _, pid := range sessionMembers(procs, id.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: it went by itself
	}
	return nil
}

// groupGone reports whether the process group has no live member left
// (zombies count as gone, see groupLive).
func groupGone(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	procs, err := listGroup(pgid)
	return err == nil && !groupLive(procs, pgid)
}

// killSession sends SIGKILL to every live process left in the session led
// by sid, but the leader: those that moved to a group of their own escape
// a kill of the leader's group.
func killSession(sid int) {
	procs, err := listSession(sid)
	if err != nil {
		return
	}
	for _, pid := range sessionMembers(procs, sid) {
		_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: it went by itself
	}
}
