package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/walkie-sh/walkie/walkie"
)

// TestWatcherFollowsReplacedFiles pins what watchSession relies on from the
// run's watcher: every change to the record and to state.json is reported
// under its name, whether the file is written in place or replaced by a
// rename (an agent's editor, walkie halt's SaveState), and still after a
// replacement. On macOS the kqueue backend watches each file through a
// descriptor on its inode, so a replaced file is a new inode that fsnotify
// must pick up: it reports the old one's Remove, then a Create for the new
// one, which it then watches; inotify reports the rename's Create. An
// in-place write after the replacement is what shows the new inode is
// watched.
func TestWatcherFollowsReplacedFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "r"+FileSuffix)
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
	c := &controller{file: file, dir: stateDir}
	defer c.close()
	w, err := c.watcher()
	if err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(stateDir, "state.json")
	for round := range 3 {
		if err := writeUnsynced(file, []byte(strings.Repeat("v\n", round+2))); err != nil {
			t.Fatal(err)
		}
		awaitEvent(t, w, file, fsnotify.Create, "the record replaced by rename")

		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString("appended\n")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		awaitEvent(t, w, file, fsnotify.Write, "an append to the replaced record")

		if err := walkie.SaveState(stateDir, &walkie.State{Status: walkie.StatusHalted}); err != nil {
			t.Fatal(err)
		}
		awaitEvent(t, w, statePath, fsnotify.Create, "state.json replaced by rename")
	}
}

// awaitEvent reads w until an event for name with op, failing after a
// bounded wait with the events seen meanwhile.
func awaitEvent(t *testing.T, w *fsnotify.Watcher, name string, op fsnotify.Op, what string) {
	t.Helper()
	var seen []string
	limit := time.NewTimer(5 * time.Second)
	defer limit.Stop()
	for {
		select {
		case ev := <-w.Events:
			if ev.Name == name && ev.Has(op) {
				return
			}
			seen = append(seen, ev.String())
		case err := <-w.Errors:
			t.Fatalf("%s: watch error %v", what, err)
		case <-limit.C:
			t.Fatalf("%s: no %s event for %s within 5s; saw %q", what, op, name, seen)
		}
	}
}
