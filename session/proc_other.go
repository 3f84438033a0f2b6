//go:build unix && !linux

package session

import (
	"errors"
	"syscall"
)

// sysProcAttr: without Linux's Pdeathsig, a controller that dies leaves the
// leader alive until KillStale (unsupported here) or the user ends it.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// ProcIdentity names a process across pid reuse (see the Linux version).
type ProcIdentity struct {
	Pid        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

var errNoProc = errors.New("process identity needs /proc (Linux only)")

// Identify is only implemented on Linux.
func Identify(pid int) (ProcIdentity, error) { return ProcIdentity{}, errNoProc }

// KillStale is only implemented on Linux.
func KillStale(id ProcIdentity) error { return errNoProc }

// groupGone reports whether the process group is empty. Without /proc,
// zombies awaiting their reaper count as present.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
