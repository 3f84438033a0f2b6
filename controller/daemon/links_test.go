package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

const notServingLink = "not serving a symbolic link: walkie serve runs only the regular walkie files under its directory"

// linkLogs counts the "not serving a symbolic link" warnings for path.
func linkLogs(logs *observer.ObservedLogs, path string) int {
	n := 0
	for _, e := range logs.FilterMessage(notServingLink).All() {
		if e.ContextMap()["path"] == path {
			n++
		}
	}
	return n
}

// listed reports whether the daemon has a debate at file.
func listed(d *running, file string) bool {
	for _, v := range d.Debates() {
		if v.File == file {
			return true
		}
	}
	return false
}

// untouched fails the test if the debate at file had an attempt.
func untouched(t *testing.T, file string) {
	t.Helper()
	if recs := turnLog(t, file); len(recs) != 0 {
		t.Errorf("%s: %d attempts through a link, want none", file, len(recs))
	}
}

// The daemon follows the directory it is given once, and no link under
// it: a linked walkie file or directory, there at start or dropped in
// later, is not served and is logged once per path (again once it is
// removed and put back); regular files beside them are served.
func TestDaemonServesNoLinks(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	root := t.TempDir()
	real := filepath.Join(root, "real")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{real, filepath.Join(outside, "tree"), filepath.Join(outside, "tree2")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	served := filepath.Join(root, "served")
	must(t, os.Symlink(real, served))

	cfg := testConfig(t, []string{fakeAgent("fa", "--sign"), fakeAgent("fb", "--sign")}, "")
	plain := newDebate(t, real, "plain", 2, "fa", "fb")
	elsewhere := newDebate(t, outside, "elsewhere", 2, "fa", "fb")
	deep := newDebate(t, filepath.Join(outside, "tree"), "deep", 2, "fa", "fb")
	atStart := filepath.Join(real, "atstart.walkie.md")
	must(t, os.Symlink(elsewhere, atStart))
	treeLink := filepath.Join(real, "tree")
	must(t, os.Symlink(filepath.Join(outside, "tree"), treeLink))
	// A person's debate that waits: it is replaced by a link later.
	waiting := newDebate(t, real, "waiting", 2, "person", "fa")

	core, logs := observer.New(zapcore.WarnLevel)
	log := zap.New(zapcore.NewTee(core, testLogger(t).Core()))
	d := startDaemon(t, Options{Dir: served, Config: cfg, Log: log})
	defer d.stop(t)

	sessiontest.WaitFor(t, 20*time.Second, "the regular debate under the linked directory converged", func() bool {
		return status(t, plain) == walkie.StatusConverged && settled(t, plain)
	})
	checkRecord(t, plain)
	if !listed(d, plain) {
		t.Errorf("the daemon does not list %s by its real path; it lists %v", plain, d.Debates())
	}
	for _, p := range []string{atStart, treeLink} {
		if n := linkLogs(logs, p); n != 1 {
			t.Errorf("%s: logged %d times at start, want once", p, n)
		}
		if listed(d, p) {
			t.Errorf("%s: a link is served", p)
		}
	}
	if listed(d, filepath.Join(treeLink, "deep.walkie.md")) {
		t.Error("a debate in a linked directory is served")
	}

	// Dropped in while serving: a linked record and a linked directory.
	later := newDebate(t, outside, "later", 2, "fa", "fb")
	laterLink := filepath.Join(real, "later.walkie.md")
	must(t, os.Symlink(later, laterLink))
	deep2 := newDebate(t, filepath.Join(outside, "tree2"), "deep2", 2, "fa", "fb")
	tree2Link := filepath.Join(real, "tree2")
	must(t, os.Symlink(filepath.Join(outside, "tree2"), tree2Link))
	// A regular file dropped in after them: once it has converged, the
	// daemon has seen the events before it.
	after := newDebate(t, real, "after", 2, "fa", "fb")
	sessiontest.WaitFor(t, 20*time.Second, "the regular file dropped in after the links converged", func() bool {
		return status(t, after) == walkie.StatusConverged && settled(t, after)
	})
	sessiontest.WaitFor(t, 5*time.Second, "both dropped-in links logged", func() bool {
		return linkLogs(logs, laterLink) >= 1 && linkLogs(logs, tree2Link) >= 1
	})
	// Another event in the directory: no second line for the links.
	must(t, os.WriteFile(filepath.Join(real, "note.txt"), []byte("x"), 0o644))
	for _, p := range []string{laterLink, tree2Link, atStart, treeLink} {
		if n := linkLogs(logs, p); n != 1 {
			t.Errorf("%s: logged %d times, want once", p, n)
		}
		if listed(d, p) {
			t.Errorf("%s: a link is served", p)
		}
	}

	// Removed and put back: logged again, still not served.
	must(t, os.Remove(laterLink))
	must(t, os.Symlink(later, laterLink))
	must(t, os.Remove(tree2Link))
	must(t, os.Symlink(filepath.Join(outside, "tree2"), tree2Link))
	sessiontest.WaitFor(t, 5*time.Second, "the links put back logged again", func() bool {
		return linkLogs(logs, laterLink) == 2 && linkLogs(logs, tree2Link) == 2
	})

	// A served record replaced by a link: its worker retires, logging once.
	repl := filepath.Join(real, ".waiting.tmp")
	must(t, os.Symlink(elsewhere, repl))
	must(t, os.Rename(repl, waiting))
	sessiontest.WaitFor(t, 5*time.Second, "the record replaced by a link is no longer served", func() bool {
		return !listed(d, waiting) && linkLogs(logs, waiting) == 1
	})

	d.stop(t)
	for _, f := range []string{elsewhere, deep, later, deep2} {
		untouched(t, f)
	}
	if n := linkLogs(logs, waiting); n != 1 {
		t.Errorf("%s: logged %d times, want once", waiting, n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
