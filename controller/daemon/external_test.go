package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// A debate another controller runs is "run by" it on the page while it
// holds the run lock, and no longer once it lets go, although letting go
// leaves no file event to wake the page (before, a SIGTERMed walkie auto
// stayed "run by walkie auto, pid N" there for good).
func TestExternalDebateLetGoIsNotRunBy(t *testing.T) {
	dir, elsewhere, registry := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "debates")
	file := newDebate(t, elsewhere, "ext", 3, "alice", "bob")
	state := walkie.StateDir(file, "ext")
	lock, err := walkie.TryRunLock(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := walkie.Register(registry, walkie.Registered{File: file, ID: "ext", PID: os.Getpid(), By: "walkie auto", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, Options{Dir: dir, Config: testConfig(t, nil, ""), Registry: registry})
	t.Cleanup(func() { d.stop(t) })
	view := func() DebateView {
		i := slices.IndexFunc(d.Debates(), func(v DebateView) bool { return v.File == file })
		if i < 0 {
			return DebateView{}
		}
		return d.Debates()[i]
	}
	sessiontest.WaitFor(t, 10*time.Second, "run by walkie auto on the page", func() bool { return view().RunBy != "" })
	if v := view(); v.RunBy != "walkie auto, pid "+strconv.Itoa(os.Getpid()) {
		t.Fatalf("run by %q", v.RunBy)
	}
	lock.Unlock()
	sessiontest.WaitFor(t, 10*time.Second, "no longer run by", func() bool { return view().RunBy == "" })
	if v := view(); v.Status != walkie.StatusOpen || v.Waiting == "" {
		t.Errorf("after the controller let go: %+v", v)
	}
}
