package walkie

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WaitTurn blocks until it is name's turn and no agent's attempt is running
// (or the debate has ended, or ctx is done). It wakes on the doorbell and
// the control state rather than polling the record; a slow fallback tick
// covers file systems without change events.
func WaitTurn(ctx context.Context, file, name string) (*Signal, error) {
	meta, err := ReadMeta(file)
	if err != nil {
		return nil, err
	}
	dir := StateDir(file, meta.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		sig, err := LoadSignal(dir)
		if err == nil && sig != nil && (sig.Turn == name || sig.Status != StatusOpen) && !attemptRunning(dir) {
			return sig, nil
		}
		select {
		case <-ctx.Done():
			return sig, fmt.Errorf("waiting for %s's turn: %w", name, ctx.Err())
		case <-w.Events:
		case err := <-w.Errors:
			return nil, fmt.Errorf("watch %s: %w", dir, err)
		case <-tick.C:
		}
	}
}

// attemptRunning reports whether a controller is running an agent's
// attempt at a turn now.
func attemptRunning(dir string) bool {
	st, err := LoadState(dir)
	return err == nil && st.Running != nil && ControllerRunning(dir)
}
