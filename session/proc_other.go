//go:build unix && !linux && !darwin

package session

import (
	"errors"
	"fmt"
	"syscall"
)

var errNoIdentity = fmt.Errorf("process identity is implemented for Linux and macOS only: %w", errors.ErrUnsupported)

// Identify is implemented for Linux and macOS only.
func Identify(pid int) (ProcIdentity, error) { return ProcIdentity{}, errNoIdentity }

// KillStale is implemented for Linux and macOS only.
func KillStale(id ProcIdentity) error { return errNoIdentity }

// groupGone reports whether the process group is empty. Without a process
// list, zombies awaiting their reaper count as present.
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// killSession needs a process list, which only Linux and macOS give.
func killSession(int) {}

// processesWith needs a process list, which only Linux and macOS give.
func processesWith(string) ([]int, error) { return nil, nil }

// sessionAncestor looks for the session's variable in the environment of
// an ancestor, which only Linux's /proc shows walkie.
func sessionAncestor() (int, string, bool) { return 0, "", false }
