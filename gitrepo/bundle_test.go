package gitrepo

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/gitrepo/gittest"
)

// clone is a clone of dir in a new temporary directory, opened.
func clone(t *testing.T, dir string) *Repo {
	t.Helper()
	to := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, dir, "clone", "--quiet", dir, to)
	r, err := Open(ctx, to)
	must(t, err)
	return r
}

// A worker's clone makes a worktree at a commit only the home had, the
// session commits there, and the home gets exactly those commits back as
// the branch: nothing else of the clone's comes along.
func TestBundleRoundTrip(t *testing.T) {
	gittest.Isolate(t)
	home := gittest.Init(t)
	hr, err := Open(ctx, home)
	must(t, err)
	w := clone(t, home)
	// The home moves on after the clone was made: the worker fetches.
	start := gittest.Commit(t, home, "a.go", "package a\n", "after the clone")
	if ok, err := w.FetchCommit(ctx, start); err != nil || !ok {
		t.Fatalf("FetchCommit = %v, %v", ok, err)
	}
	if roots, _ := w.Roots(ctx, start); len(roots) != 1 || roots[0] != gittest.Git(t, home, "rev-list", "--max-parents=0", "HEAD") {
		t.Fatalf("roots %v", roots)
	}
	if w.Origin(ctx) != home || hr.Origin(ctx) != "" {
		t.Fatalf("origins %q, %q", w.Origin(ctx), hr.Origin(ctx))
	}
	gittest.Commit(t, w.Root, "local.txt", "the worker's own\n", "not the session's")
	wt := filepath.Join(t.TempDir(), "wt")
	branch := "walkie/d/turn-2"
	must(t, w.AddWorktree(ctx, wt, branch, start))
	gittest.Commit(t, wt, "fix.go", "package fix\n", "one")
	head := gittest.Commit(t, wt, "fix.go", "package fix // two\n", "two")
	must(t, w.RemoveWorktree(ctx, wt))

	b, err := w.Bundle(ctx, branch, start, 1<<20)
	must(t, err)
	got, err := hr.Unbundle(ctx, b, branch)
	must(t, err)
	if got != head {
		t.Fatalf("the home's branch at %s, want %s", got, head)
	}
	if n := gittest.Git(t, home, "rev-list", "--count", start+".."+branch); n != "2" {
		t.Fatalf("%s commits came home, want 2", n)
	}
	if out, err := hr.output(ctx, nil, "cat-file", "-e", gittest.Git(t, w.Root, "rev-parse", "main")); err == nil {
		t.Fatalf("the worker's own commit came home too: %s", out)
	}
	// Again (a home that died before settling unbundles once more), and a
	// retried turn's branch replaced.
	if again, err := hr.Unbundle(ctx, b, branch); err != nil || again != head {
		t.Fatalf("unbundle again: %s, %v", again, err)
	}
	must(t, hr.SetBranch(ctx, branch, start))
	if again, err := hr.Unbundle(ctx, b, branch); err != nil || again != head {
		t.Fatalf("unbundle over a moved branch: %s, %v", again, err)
	}
}

// A bundle over its cap is refused with its size, never cut; a home
// without the bundle's base cannot take it, and says so.
func TestBundleCapAndMissingBase(t *testing.T) {
	gittest.Isolate(t)
	home := gittest.Init(t)
	start := gittest.Git(t, home, "rev-parse", "HEAD")
	w := clone(t, home)
	must(t, w.SetBranch(ctx, "walkie/d/turn-1", start))
	gittest.Git(t, w.Root, "switch", "--quiet", "walkie/d/turn-1")
	// Random-looking content does not compress below its size.
	var big strings.Builder
	for i := range 20000 {
		big.WriteString(strings.Repeat(string(rune('a'+i*7%26)), i%5+1))
		big.WriteString(string(rune('0' + i*13%10)))
	}
	gittest.Commit(t, w.Root, "big.txt", big.String(), "big")
	_, err := w.Bundle(ctx, "walkie/d/turn-1", start, 512)
	var tl *BundleTooLargeError
	if !errors.As(err, &tl) || tl.Limit != 512 || tl.Size <= 512 || !strings.Contains(err.Error(), "over the cap of 512") {
		t.Fatalf("error %v, want the bundle refused with its size", err)
	}
	b, err := w.Bundle(ctx, "walkie/d/turn-1", start, 1<<20)
	must(t, err)
	if int64(len(b)) != tl.Size {
		t.Fatalf("bundle of %d bytes, the refusal said %d", len(b), tl.Size)
	}
	// Not gittest.Init: its first commit would be the same commit.
	od := t.TempDir()
	gittest.Git(t, od, "init", "--quiet", "--initial-branch=main")
	gittest.Commit(t, od, "other.txt", "another project\n", "first")
	other, err := Open(ctx, od)
	must(t, err)
	if _, err := other.Unbundle(ctx, b, "walkie/d/turn-1"); err == nil {
		t.Fatal("a repository without the base took the bundle")
	}
	if h, _ := other.Head(ctx, "walkie/d/turn-1"); h != "" {
		t.Fatal("a refused bundle left a branch")
	}
}

// A commit neither the clone nor its origin has is reported missing;
// an origin that cannot be reached is an error naming the fetch.
func TestFetchCommitMissing(t *testing.T) {
	gittest.Isolate(t)
	home := gittest.Init(t)
	w := clone(t, home)
	nobodys := strings.Repeat("ab", 20)
	if ok, err := w.FetchCommit(ctx, nobodys); ok || err != nil {
		t.Fatalf("FetchCommit = %v, %v; want missing, no error", ok, err)
	}
	gittest.Git(t, w.Root, "remote", "set-url", "origin", filepath.Join(t.TempDir(), "gone"))
	if ok, err := w.FetchCommit(ctx, nobodys); ok || err == nil || !strings.Contains(err.Error(), "git fetch origin") {
		t.Fatalf("FetchCommit = %v, %v; want the fetch's error", ok, err)
	}
	// What the clone has needs no origin.
	if ok, err := w.FetchCommit(ctx, gittest.Git(t, home, "rev-parse", "HEAD")); !ok || err != nil {
		t.Fatalf("FetchCommit of a commit the clone has = %v, %v", ok, err)
	}
}
