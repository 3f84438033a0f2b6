package gitrepo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/walkie"
)

// Whatever a session changes outside its own refs is found and put
// back: branches moved, made or deleted, tags forged, another debate's
// branch, HEAD, the index, the config, the hooks. Its own branch is left.
func TestGuardRestores(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	main := gittest.Git(t, dir, "rev-parse", "HEAD")
	gittest.Git(t, dir, "tag", "v1")
	gittest.Git(t, dir, "branch", "side")
	gittest.Git(t, dir, "branch", "walkie/d/turn-1")
	hooks := filepath.Join(dir, ".git", "hooks")
	must(t, os.MkdirAll(hooks, 0o755))
	must(t, os.WriteFile(filepath.Join(hooks, "pre-push"), []byte("#!/bin/sh\nexit 0\n"), 0o755))
	r, err := Open(ctx, dir)
	must(t, err)
	g, err := r.Guard(ctx, "refs/heads/walkie/d/")
	must(t, err)
	// As a killed controller leaves it, and the next one reads it.
	b, err := json.Marshal(g)
	must(t, err)
	g = new(Guard)
	must(t, json.Unmarshal(b, g))

	// The session, in its worktree, commits on its branch and then
	// reaches into the shared repository.
	wt := filepath.Join(t.TempDir(), "wt")
	must(t, r.AddWorktree(ctx, wt, "walkie/d/turn-2", main))
	evil := gittest.Commit(t, wt, "evil.go", "package evil\n", "evil")
	gittest.Git(t, wt, "update-ref", "refs/heads/main", evil)
	gittest.Git(t, wt, "tag", "v2", evil)
	gittest.Git(t, wt, "tag", "-d", "v1")
	gittest.Git(t, wt, "branch", "-f", "side", evil)
	gittest.Git(t, wt, "branch", "walkie/other/turn-1", evil)
	gittest.Git(t, wt, "branch", "-f", "walkie/d/turn-1", evil) // its own debate's: allowed
	gittest.Git(t, dir, "symbolic-ref", "HEAD", "refs/heads/side")
	must(t, os.WriteFile(filepath.Join(dir, "staged.txt"), []byte("x\n"), 0o644))
	gittest.Git(t, dir, "add", "staged.txt")
	gittest.Git(t, wt, "config", "core.fsmonitor", "/planted")
	must(t, os.WriteFile(filepath.Join(hooks, "post-checkout"), []byte("#!/bin/sh\necho pwned\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(hooks, "pre-push"), []byte("#!/bin/sh\necho pwned\n"), 0o755))

	changed, err := r.Restore(ctx, g)
	must(t, err)
	want := []string{
		"changed .git/config",
		"added .git/hooks/post-checkout",
		"changed .git/hooks/pre-push",
		"moved refs/heads/main from " + main[:12] + " to " + evil[:12],
		"moved refs/heads/side from " + main[:12] + " to " + evil[:12],
		"made refs/heads/walkie/other/turn-1 (at " + evil[:12] + ")",
		"deleted refs/tags/v1 (it was at " + main[:12] + ")",
		"made refs/tags/v2 (at " + evil[:12] + ")",
		"moved HEAD from -> refs/heads/main to -> refs/heads/side",
		"changed the index of " + dir,
	}
	if !slices.Equal(changed, want) {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(changed, "\n"), strings.Join(want, "\n"))
	}
	for ref, sha := range map[string]string{"main": main, "side": main, "v1": main, "walkie/d/turn-1": evil, "walkie/d/turn-2": evil} {
		if got := gittest.Git(t, dir, "rev-parse", ref); got != sha {
			t.Errorf("%s at %s, want %s", ref, got[:7], sha[:7])
		}
	}
	if out := gittest.Git(t, dir, "tag", "--list", "v2") + gittest.Git(t, dir, "branch", "--list", "walkie/other/*"); out != "" {
		t.Errorf("forged refs left: %s", out)
	}
	if b := gittest.Git(t, dir, "symbolic-ref", "HEAD"); b != "refs/heads/main" {
		t.Errorf("HEAD on %s", b)
	}
	if s := gittest.Git(t, dir, "status", "--porcelain", "--untracked-files=no"); s != "" {
		t.Errorf("the index still differs:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(hooks, "post-checkout")); err == nil {
		t.Error("the planted hook is still there")
	}
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-push")); string(b) != "#!/bin/sh\nexit 0\n" {
		t.Errorf("pre-push is %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".git", "config")); strings.Contains(string(b), "planted") {
		t.Errorf("the config still sets the fsmonitor:\n%s", b)
	}
	// All put back: nothing left to find.
	if again, err := r.Restore(ctx, g); err != nil || len(again) != 0 {
		t.Fatalf("a second look finds %q, %v", again, err)
	}
}

// A session that stays on its own branch changes nothing the guard
// watches, however much it commits there; nor do another thread's record
// commits meanwhile (git: commit moves HEAD's branch and the index, and
// changes no code).
func TestGuardQuietSession(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	file := newRecord(t, dir)
	post(t, file, walkie.Post{From: "builder", Body: []byte("Please review.\n")})
	_, err := CommitEntries(ctx, file)
	must(t, err)
	r, err := Open(ctx, dir)
	must(t, err)
	g, err := r.Guard(ctx, "refs/heads/walkie/d/")
	must(t, err)
	post(t, file, walkie.Post{Supervisor: true, Body: []byte("Looking.\n")})
	if c, err := CommitEntries(ctx, file); err != nil || len(c.Commits) != 1 {
		t.Fatalf("committed %+v, %v", c, err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	must(t, r.AddWorktree(ctx, wt, "walkie/d/turn-1", gittest.Git(t, dir, "rev-parse", "HEAD")))
	gittest.Commit(t, wt, "fix.go", "package fix\n", "the fix")
	gittest.Git(t, wt, "gc", "--quiet") // packs the refs: their values stay
	must(t, r.RemoveWorktree(ctx, wt))
	if changed, err := r.Restore(ctx, g); err != nil || len(changed) != 0 {
		t.Fatalf("found %q, %v", changed, err)
	}
	if s := gittest.Git(t, dir, "status", "--porcelain"); s != "" {
		t.Fatalf("git status:\n%s", s)
	}
}

// A detached HEAD put on a branch by the session is detached again, at
// the commit it was at.
func TestGuardDetachedHead(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	first := gittest.Git(t, dir, "rev-parse", "HEAD")
	gittest.Commit(t, dir, "b.txt", "b\n", "second")
	gittest.Git(t, dir, "checkout", "--quiet", "--detach", first)
	r, err := Open(ctx, dir)
	must(t, err)
	g, err := r.Guard(ctx, "refs/heads/walkie/d/")
	must(t, err)
	gittest.Git(t, dir, "symbolic-ref", "HEAD", "refs/heads/main")
	changed, err := r.Restore(ctx, g)
	must(t, err)
	if want := []string{"moved HEAD from " + first[:12] + " to -> refs/heads/main"}; !slices.Equal(changed, want) {
		t.Fatalf("changes %q, want %q", changed, want)
	}
	if got := gittest.Git(t, dir, "rev-parse", "HEAD"); got != first {
		t.Fatalf("HEAD at %s", got)
	}
	if _, err := r.output(ctx, nil, "symbolic-ref", "-q", "HEAD"); err == nil {
		t.Fatal("HEAD is on a branch")
	}
}
