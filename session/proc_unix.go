//go:build unix

package session

import (
	"errors"
	"fmt"
	"syscall"

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

// signalName gives the conventional name ("SIGTERM"); syscall.Signal's
// String gives the description ("terminated").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}
