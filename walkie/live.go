package walkie

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// LiveFile is the name of the live view in a debate's state directory.
const LiveFile = "live.json"

// Live is .walkie/ID/live.json: what the sessions a controller runs for
// a debate are doing now, for `walkie follow` in another terminal. The
// controller rewrites it as they start, change activity and end, and
// removes it when it stops. It is a view, never part of the record or
// the control state: a crash leaves it stale, which Current tells.
type Live struct {
	ControllerPID int           `json:"controller_pid"`
	Sessions      []LiveSession `json:"sessions"`
	UpdatedAt     time.Time     `json:"updated_at"`
}

// LiveSession is one running agent session: a debate's turn, or one of a
// round table's reviewers running side by side.
type LiveSession struct {
	Turn    int       `json:"turn"`
	Round   int       `json:"round"`
	Agent   string    `json:"agent"`
	Attempt int       `json:"attempt"`
	Started time.Time `json:"started"`
	// Activity is what the agent is doing, as session/activity words it
	// ("reading api.go", "writing its turn"); "" until it is known.
	Activity string `json:"activity,omitempty"`
}

// WriteLive replaces the live view. It is renamed into place, so a reader
// never sees half of it, but not synced: after a crash an older view, or
// none, is as good as the one lost.
func WriteLive(dir string, l *Live) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+LiveFile+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op after the rename
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write live view: %w", err)
	}
	return os.Rename(f.Name(), filepath.Join(dir, LiveFile))
}

// RemoveLive removes the live view; there being none is no error.
func RemoveLive(dir string) error {
	err := os.Remove(filepath.Join(dir, LiveFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// LoadLive reads the live view: nil when there is none.
func LoadLive(dir string) (*Live, error) {
	b, err := os.ReadFile(filepath.Join(dir, LiveFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l Live
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, LiveFile), err)
	}
	return &l, nil
}

// Current reports whether the process that wrote the view still runs: a
// view left by a controller that died says nothing about now.
func (l *Live) Current() bool { return l != nil && ProcessAlive(l.ControllerPID) }

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
