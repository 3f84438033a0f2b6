package session

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// A scan of the process table can miss one of a session's processes: a
// process in the middle of an exec shows no environment until the new
// program's is set up, and one that forked after the scan read its parent
// is not in it. Sweep scans again until sweepQuiet scans in a row, a
// sweepPause apart, find none, and gives up after sweepPasses.
const (
	sweepQuiet  = 2
	sweepPause  = 20 * time.Millisecond
	sweepPasses = 10
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
	var errs []error
	for pass, quiet := 0, 0; pass < sweepPasses && quiet < sweepQuiet; pass++ {
		if pass > 0 {
			time.Sleep(sweepPause)
		}
		n, err := killCarrying(SessionVar + "=" + id)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep session %s: %w", id, err))
			break
		}
		if n > 0 {
			quiet = 0
		} else {
			quiet++
		}
	}
	for _, dir := range []string{homeDir(id), tmpDir(id)} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("sweep session %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// killCarrying kills every process but this one whose environment holds
// kv, and the sessions they lead; it says how many it found.
func killCarrying(kv string) (int, error) {
	pids, err := processesWith(kv)
	n := 0
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue
		}
		n++
		_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: it went by itself
		killSession(pid)
	}
	return n, err
}
