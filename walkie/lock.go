package walkie

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// Lock is an exclusive advisory lock (flock) on a file. The kernel drops it
// when the holder dies, so a crash never leaves anything locked. Every lock
// walkie takes goes through LockFile or TryLockFile: the record lock, the
// controller's run lock, the daemon's directory lock.
type Lock struct{ f *flock.Flock }

// LockFile takes the lock at path, waiting for it until ctx ends. It waits
// in the kernel, not by polling, so the lock passes to the next holder the
// moment it is released.
func LockFile(ctx context.Context, path string) (*Lock, error) {
	f, err := newFlock(path)
	if err != nil {
		return nil, err
	}
	if ctx.Done() == nil {
		if err := f.Lock(); err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return &Lock{f}, nil
	}
	got := make(chan error, 1)
	go func() { got <- f.Lock() }()
	select {
	case err := <-got:
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return &Lock{f}, nil
	case <-ctx.Done():
		// The wait in the kernel cannot be called off: whoever gets the
		// lock later gives it straight back.
		go func() {
			if <-got == nil {
				_ = f.Close()
			}
		}()
		return nil, fmt.Errorf("lock %s: %w", path, context.Cause(ctx))
	}
}

// TryLockFile takes the lock at path if it is free, or comes free within
// patience, and writes the holder's pid into the file. When another process
// holds it, the error wraps ErrLocked and names that process's pid, as the
// file says. Patience covers a holder that lets go at once: a prober (see
// Held), or the child of a dead holder that inherited the descriptor for
// the moment before its exec.
func TryLockFile(path string, patience time.Duration) (*Lock, error) {
	f, err := newFlock(path)
	if err != nil {
		return nil, err
	}
	ok, err := f.TryLock()
	if err == nil && !ok && patience > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		ok, err = f.TryLockContext(ctx, patience/10+time.Millisecond)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		holder := "unknown"
		if pid := Holder(path); pid > 0 {
			holder = strconv.Itoa(pid)
		}
		return nil, fmt.Errorf("%s is held by pid %s: %w", path, holder, ErrLocked)
	}
	// Another descriptor on the same file: the lock is the open file
	// description's, and the pid is only there for messages.
	_ = os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	return &Lock{f}, nil
}

// Held reports whether some process holds the lock at path, by taking it
// for a moment: callers that must take it themselves allow for that with
// TryLockFile's patience.
func Held(path string) bool {
	f, err := newFlock(path)
	if err != nil {
		return false
	}
	ok, err := f.TryLock()
	if err != nil {
		return false
	}
	if ok {
		_ = f.Close()
	}
	return !ok
}

// Holder is the pid written into the lock file at path, or 0.
func Holder(path string) int {
	b, _ := os.ReadFile(path)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

func newFlock(path string) (*flock.Flock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return flock.New(path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o644)), nil
}

// Unlock releases the lock; it may be called more than once.
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// ProcessAlive reports whether a process of that id exists. It reads and
// locks nothing, so it can be asked as often as needed without getting in
// the way of a controller starting (as ControllerRunning would).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
