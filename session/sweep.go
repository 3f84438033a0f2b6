package session

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Sweep ends what a session left behind when its controller died before
// it could end the session itself, knowing only the id recorded before the
// start: every process whose environment carries the id (the agent, and
// its descendants, whichever group or session they moved to), the
// sessions those processes lead, and the private HOME and TMPDIR named
// after the id. A process that cleared its environment and left the
// session escapes it; KillStale with the recorded pid covers the session
// itself. Nothing found is not an error.
func Sweep(id string) error {
	if !validID(id) {
		return fmt.Errorf("sweep session %q: not a session id", id)
	}
	pids, err := processesWith(SessionVar + "=" + id)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("sweep session %s: %w", id, err))
	}
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: it went by itself
		killSession(pid)
	}
	for _, dir := range []string{homeDir(id), tmpDir(id)} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("sweep session %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
