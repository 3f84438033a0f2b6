//go:build unix

package session

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// signalGroup sends sig to every process in the group pgid. ESRCH (the
// group is already empty) is success: ending is idempotent.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 0 {
		// kill(0 or -1) would hit the controller's own group or every
		// process it may signal.
		return fmt.Errorf("signal group %d: invalid process group", pgid)
	}
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill(-%d, %s): %w", pgid, signalName(sig), err)
	}
	return nil
}

// awaitGroupExit waits, up to limit, until no live process is left in the
// group. SIGKILL is asynchronous: kill returns before the targets are gone,
// and members other than the leader are not ours to reap (init reaps them),
// so without this a caller could still see them just after Wait returned.
func awaitGroupExit(pgid int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for delay := 100 * time.Microsecond; !groupGone(pgid); delay = min(2*delay, 20*time.Millisecond) {
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(delay)
	}
}

// signalName gives the conventional name ("SIGTERM"); syscall.Signal's
// String gives the description ("terminated").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
