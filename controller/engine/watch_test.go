package engine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/walkie"
)

// TestHubFollowsReplacedFiles pins what the supervisor relies on from the
// engine's watcher: every change to the record and to state.json reaches
// the job watching it, whether the file is written in place or replaced by
// a rename (an agent's editor, walkie halt's SaveState), and still after a
// replacement. On macOS the kqueue backend watches each file through a
// descriptor on its inode, so a replaced file is a new inode that fsnotify
// must pick up: it reports the old one's Remove, then a Create for the new
// one, which it then watches; inotify reports the rename's Create. An
// in-place write after the replacement is what shows the new inode is
// watched.
func TestHubFollowsReplacedFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r"+walkie.FileSuffix)
	stateDir := filepath.Join(dir, ".walkie", "r")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("v0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := walkie.SaveState(stateDir, &walkie.State{}); err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(stateDir, walkie.LogFile)
	h, err := newHub(zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer h.close()
	sub, err := h.subscribe(file, statePath)
	if err != nil {
		t.Fatal(err)
	}
	defer h.unsubscribe(sub)
	for round := range 3 {
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte("replaced\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
		awaitChange(t, sub, file, "the record replaced by rename", round)

		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString("appended\n")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		awaitChange(t, sub, file, "an append to the replaced record", round)

		if err := walkie.SaveState(stateDir, &walkie.State{Status: walkie.StatusHalted, ExtraRounds: round + 1}); err != nil {
			t.Fatal(err)
		}
		awaitChange(t, sub, statePath, "a line appended to the log", round)
	}
}

// awaitChange waits, bounded, until sub reports name as changed.
func awaitChange(t *testing.T, sub *subscription, name, what string, round int) {
	t.Helper()
	var seen []string
	limit := time.NewTimer(5 * time.Second)
	defer limit.Stop()
	for {
		select {
		case <-sub.notify:
			changed := sub.take()
			if slices.Contains(changed, name) {
				return
			}
			seen = append(seen, changed...)
		case <-limit.C:
			t.Fatalf("round %d: %s: no change of %s within 5s; saw %q", round, what, name, seen)
		}
	}
}
