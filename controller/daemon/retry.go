package daemon

import (
	"errors"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// transient reports whether err is the machine's trouble rather than the
// record's: out of descriptors or memory, a full disk, a failed or
// interrupted read. It goes away by itself, with no event to say so, so
// the worker retries it with backoff, even when the controller marked it
// as bad input (it wraps every failure to read the record so).
func transient(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.ENOBUFS, syscall.EAGAIN, syscall.EINTR,
		syscall.EIO, syscall.ENOSPC, syscall.EDQUOT:
		return true
	}
	return false
}

// loadFailed is check's answer to a record or state it could not read.
// A transient error is looked at again after 1 s, doubling to 5 min;
// anything else (often a file caught half-written) waits for the file to
// change, whose write wakes the worker.
func (w *worker) loadFailed(err error) (action, time.Duration) {
	if !transient(err) {
		w.ioDelay = 0
		w.setError(err.Error())
		return actWait, 0
	}
	w.ioDelay = nextDelay(w.ioDelay, maxErrorDelay)
	w.mu.Lock()
	w.view.Error = err.Error()
	w.mu.Unlock()
	w.log.Warn("cannot read the debate; retrying", zap.Error(err), zap.Duration("retry_in", w.ioDelay))
	return actWait, w.ioDelay
}
