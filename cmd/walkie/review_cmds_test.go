package main

import (
	"context"
	mergegate "github.com/walkie-sh/walkie/controller/gate"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

func TestReviewCommandsParse(t *testing.T) {
	r := parse(t, reviewCommand, "docs/a.md", "docs/design/**/*.md", "--base", "main", "--agents", "claude,codex", "--budget", "2.5",
		"--fail-on", "never", "--max-rounds", "3", "--json")
	if !reflect.DeepEqual(r.Docs, []string{"docs/a.md", "docs/design/**/*.md"}) || r.Base != "main" || r.BudgetUSD != 2.5 || r.FailOn != "never" ||
		r.MaxRounds != 3 || !r.MaxRoundsSet || !r.JSON || r.Mode != "debate" || r.ConfigPath != "" {
		t.Errorf("review options %+v", r)
	}
	if r := parse(t, reviewCommand, "docs/a.md"); r.MaxRoundsSet || r.FailOn != "disagreement" {
		t.Errorf("review defaults %+v", r)
	}
	file := mustInit(t, filepath.Join(t.TempDir(), "d.walkie.md"))
	if g := parse(t, gateCommand, file, "--ref", "3f2a9c1", "--base", "main", "--json"); g.Gate.File != file || g.Gate.Ref != "3f2a9c1" || g.Gate.Base != "main" || g.JSON == nil {
		t.Errorf("gate options %+v", g)
	}
	n := parse(t, threadCommand, "new", "reviews", "login-fix", "--agents", "ada,brook", "--approve", "--git-commit")
	if n.Dir != "reviews" || n.Slug != "login-fix" || !n.Init.Approve || n.Init.Git != walkie.GitCommit || len(n.Init.Participants) != 2 {
		t.Errorf("thread new options %+v", n)
	}
}

// A thread started in a channel, a gate that finds no verdict in it, and
// a review of a document outside any git repository.
func TestReviewCommandsRun(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "reviews")
	f := fakeFactory("")
	o := parse(t, threadCommand, "new", dir, "login-fix", "--agents", "ada,brook", "--approve")
	o.IO = f.IO
	out, _, code := f.run(t, func() error { return threadNew(ctx, o) })
	file := filepath.Join(dir, "login-fix.walkie.md")
	if code != 0 || out != "created thread "+file+" (ada builds, brook reviews); bound to no git repository, so refs are not checked (--repo binds it); briefing approved\n" {
		t.Fatalf("thread new: exit %d, %q", code, out)
	}
	out, _, code = f.run(t, func() error { return statusRun(ctx, &statusOptions{IO: f.IO, Dir: dir}) })
	if code != 0 || !strings.HasPrefix(out, "channel "+dir+" (1 thread, open: login-fix.walkie.md)\n* login-fix.walkie.md  open  turn 1 · ada") {
		t.Errorf("status of the channel: exit %d\n%s", code, out)
	}
	// Outside any git repository there are no allowed signers to read.
	err := gateRun(ctx, &gateOptions{IO: f.IO, Gate: mergegate.Options{File: file, Ref: "3f2a9c1", Base: "main"}})
	if code := exitCode(err); code != exitBadInput || err == nil || !strings.Contains(err.Error(), "allowed signers") {
		t.Errorf("gate of a thread outside a repository: exit %d, want %d: %v", code, exitBadInput, err)
	}

	for _, name := range ciSecrets {
		t.Setenv(name, os.Getenv(name)) // reviewRun removes them; the test puts them back
	}
	t.Chdir(t.TempDir())
	_, _, code = f.run(t, func() error {
		return reviewRun(ctx, &reviewCmdOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Docs: []string{"design.md"}, Mode: "debate", MaxRounds: 3, FailOn: "disagreement"})
	})
	if code != exitBadInput {
		t.Errorf("review outside a git repository: exit %d, want %d", code, exitBadInput)
	}
}
