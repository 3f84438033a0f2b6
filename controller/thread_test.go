package controller

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/walkie"
)

// A closed thread has ended: Next says so, with who closed it and how.
func TestNextOnAClosedThread(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.walkie.md")
	must(t, walkie.Init(file, walkie.InitOptions{Participants: []string{"a", "b"}, MaxRounds: 3, Briefing: []byte("Review it.\n"), Typed: true, Approve: true}))
	for _, p := range []walkie.Post{
		{From: "a", Body: []byte("Please review.\n"), Tags: walkie.Tags{Type: walkie.TypeReviewRequest}},
		{From: "b", Body: []byte("Nothing to review; closing.\n"), Tags: walkie.Tags{Type: walkie.TypeClose}},
	} {
		if _, err := walkie.Append(file, p); err != nil {
			t.Fatal(err)
		}
	}
	d, err := walkie.Load(file)
	must(t, err)
	dec := Next(Look{Doc: d, State: &walkie.State{}, Config: config.Default(), Now: time.Now()})
	if dec.Action != ActEnd || dec.Status != walkie.StatusClosed || dec.Why != "by b in turn 2: Nothing to review; closing." {
		t.Fatalf("decision %+v", dec)
	}
}

// Where a turn's worktree starts: the commit the record last cites, else
// the debate's base, else HEAD; a start that names no commit is the
// record's fault, said before anything runs.
func TestWorktreeStart(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	first := gittest.Git(t, dir, "rev-parse", "HEAD")
	gittest.Git(t, dir, "branch", "release")
	second := gittest.Commit(t, dir, "a.go", "package a\n", "second")
	file := filepath.Join(dir, "r.walkie.md")
	must(t, walkie.Init(file, walkie.InitOptions{Participants: []string{"a", "b"}, MaxRounds: 3, Briefing: []byte("Review it.\n"),
		Repo: ".", Workspace: walkie.WorkspaceWorktree, Base: "release", Approve: true}))
	c, err := newController(Options{File: file})
	must(t, err)
	start := func() string {
		t.Helper()
		d, err := walkie.Load(file)
		must(t, err)
		p := &plan{Decision: Decision{Turn: d.Progress().NextTurn, Participant: d.Progress().NextAgent}, attempt: 1, meta: d.Meta}
		w, err := c.worktreeFor(context.Background(), p, d)
		must(t, err)
		if w == nil {
			t.Fatal("no worktree")
		}
		if want := filepath.Join(c.dir, "worktrees", "0001-a-1"); p.Turn == 1 && w.path != want {
			t.Errorf("path %s, want %s", w.path, want)
		}
		return w.start
	}
	if got := start(); got != first {
		t.Fatalf("before any ref: start %s, want release's %s", got[:7], first[:7])
	}
	refs, _ := walkie.ParseRefs("main@" + second[:7])
	if _, err := walkie.Append(file, walkie.Post{From: "a", Body: []byte("Please review.\n"), Tags: walkie.Tags{Type: walkie.TypeReviewRequest, Refs: refs}}); err != nil {
		t.Fatal(err)
	}
	if got := start(); got != second {
		t.Fatalf("after a request at %s: start %s", second[:7], got[:7])
	}
	// A cited commit that is gone (a rewritten history) stops the turn.
	bogus, _ := walkie.ParseRefs("0123456789abcdef")
	if _, err := walkie.Append(file, walkie.Post{Supervisor: true, Body: []byte("See this.\n"), Tags: walkie.Tags{Type: walkie.TypeInfo, Refs: bogus}}); err != nil {
		t.Fatal(err)
	}
	d, _ := walkie.Load(file)
	_, err = c.worktreeFor(context.Background(), &plan{Decision: Decision{Turn: 2, Participant: "b"}, attempt: 1, meta: d.Meta}, d)
	if err == nil || !strings.Contains(err.Error(), "turn 2's worktree would start at the last commit the record cites, 0123456789abcdef, which names no commit") {
		t.Fatalf("got %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
