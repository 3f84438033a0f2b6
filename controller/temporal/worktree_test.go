package temporal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	temporalsdk "go.temporal.io/sdk/temporal"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/gitrepo/gittest"
)

// gitAgent lets the agent's session commit as the test's identity.
const gitAgent = "    env_allow: [\"GIT_*\"]\n"

// worktreeSetup is a home repository that moved on after the worker
// cloned it, the worker with that clone as its --repo, and turn 1 of a
// debate to run in a worktree at the home's head.
func worktreeSetup(t *testing.T, command string) (w *Worker, home *gitrepo.Repo, clone string, in TurnInput) {
	t.Helper()
	return worktreeSetupWith(t, gitAgent, command)
}

// worktreeSetupWith is worktreeSetup with the agent's other keys given.
func worktreeSetupWith(t *testing.T, agentKeys, command string) (w *Worker, home *gitrepo.Repo, clone string, in TurnInput) {
	t.Helper()
	gittest.Isolate(t)
	homeDir := gittest.Init(t)
	clone = filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, homeDir, "clone", "--quiet", homeDir, clone)
	start := gittest.Commit(t, homeDir, "a.go", "package a\n", "after the clone")
	home, err := gitrepo.Open(t.Context(), homeDir)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := home.Roots(t.Context(), start)
	if err != nil {
		t.Fatal(err)
	}
	w = newTestWorker(t, command, agentKeys)
	if w.repos, err = openRepos(t.Context(), []string{clone}); err != nil {
		t.Fatal(err)
	}
	in = turnInput(t, w)
	in.Worktree = &controller.Worktree{Branch: "walkie/d/turn-1", Start: start, Roots: roots, Origin: homeDir}
	return w, home, clone, in
}

// noTreesLeft fails unless the clone has only its main work tree, no
// turn branch, and the worker's directory notes no worktree.
func noTreesLeft(t *testing.T, w *Worker, clone string) {
	t.Helper()
	if list := gittest.Git(t, clone, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Fatalf("worktrees left in the clone:\n%s", list)
	}
	if notes, _ := filepath.Glob(filepath.Join(w.o.Dir, "*", "*", treeFile)); len(notes) != 0 {
		t.Fatalf("worktree notes left: %v", notes)
	}
	if trees, _ := filepath.Glob(filepath.Join(w.o.Dir, "*", "*", "tree")); len(trees) != 0 {
		t.Fatalf("worktree directories left: %v", trees)
	}
}

// The session runs in a worktree of the worker's clone at the commit the
// home resolved (fetched, since the clone lacked it), on the turn's
// branch, told where it is; what it committed comes back as a bundle the
// home's repository takes as that branch, and nothing stays on the
// worker.
func TestTurnInAWorktreeSendsItsCommitsHome(t *testing.T) {
	seenDir := t.TempDir()
	seen := filepath.Join(seenDir, "seen")
	gitAgent := gitAgent + fmt.Sprintf("    sandbox_write: [%q]\n", seenDir) // what it saw goes there
	w, home, clone, in := worktreeSetupWith(t, gitAgent, `[sh, -c, 'pwd > `+seen+`; echo "$WALKIE_BRANCH $WALKIE_BASE $WALKIE_WORKTREE" >> `+seen+
		`; cat a.go >> `+seen+`; echo fixed > fix.go && git add fix.go && git commit -qm "the fix" && printf "\n## Turn 1 · alice\nFixed on my branch.\n" >> "$1"', "{prompt}", "{file}"]`)
	r, err := runTurnActivity(t, w, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(seen)
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(r.Kept, "tree")
	if want := tree + "\nwalkie/d/turn-1 " + in.Worktree.Start + " " + tree + "\npackage a\n"; string(b) != want {
		t.Fatalf("the session saw:\n%s\nwant:\n%s", b, want)
	}
	c, bundle := r.Commits, got(t, w, r.Bundle)
	if c == nil || c.Branch != "walkie/d/turn-1" || c.Start != in.Worktree.Start || c.Head == c.Start || len(bundle) == 0 || c.Bundle != nil {
		t.Fatalf("commits %+v, want the session's commit on its branch, bundled apart", c)
	}
	if after := got(t, w, r.After); !strings.Contains(string(after), "Fixed on my branch.") {
		t.Fatalf("the agent's version:\n%s", after)
	}
	head, err := home.Unbundle(t.Context(), bundle, c.Branch)
	if err != nil || head != c.Head {
		t.Fatalf("the home's branch at %s (%v), want %s", head, err, c.Head)
	}
	if got := gittest.Git(t, home.Root, "show", c.Head+":fix.go"); got != "fixed" {
		t.Fatalf("fix.go at the branch: %q", got)
	}
	noTreesLeft(t, w, clone)
	if out := gittest.Git(t, clone, "branch", "--list", "walkie/*"); out != "" {
		t.Fatalf("the turn's branch stays in the worker's clone: %s", out)
	}
}

// A session that reaches into the worker's clone outside its branches
// (a hook planted, main moved) finds it put back, and the turn's commits
// go home marked tampered, for the home to judge the attempt so.
func TestTurnInAWorktreeThatTampers(t *testing.T) {
	w, _, clone, in := worktreeSetup(t, `[sh, -c, 'printf "#!/bin/sh\necho ran >> /dev/null\n" > "$(git rev-parse --path-format=absolute --git-common-dir)/hooks/post-checkout" && git commit -q --allow-empty -m evil && git update-ref refs/heads/main HEAD']`)
	main := gittest.Git(t, clone, "rev-parse", "main")
	r, err := runTurnActivity(t, w, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Commits
	if c == nil || !strings.Contains(c.Tampered, "added .git/hooks/post-checkout") || !strings.Contains(c.Tampered, "moved refs/heads/main from "+main[:12]) {
		t.Fatalf("commits %+v, want the tampering told", c)
	}
	if got := gittest.Git(t, clone, "rev-parse", "main"); got != main {
		t.Fatalf("the clone's main at %s, want %s", got, main)
	}
	if _, err := os.Stat(filepath.Join(clone, ".git", "hooks", "post-checkout")); err == nil {
		t.Fatal("the planted hook stays in the clone")
	}
	noTreesLeft(t, w, clone)
}

// Commits over the cap are refused, never cut: the error says where they
// are kept (the branch stays in the worker's clone), and no retry on any
// worker makes them smaller.
func TestTurnInAWorktreeRefusesCommitsOverTheCap(t *testing.T) {
	w, _, clone, in := worktreeSetup(t, `[sh, -c, 'head -c 1300000 /dev/urandom > big.bin && git add big.bin && git commit -qm big']`)
	w.bundleMax = 1 << 20 // a gibibyte is the real cap
	_, err := runTurnActivity(t, w, in, nil)
	var app *temporalsdk.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeTooLarge || !app.NonRetryable() {
		t.Fatalf("error %v, want a non-retryable too-large error", err)
	}
	for _, want := range []string{"over the cap of", clone, "walkie/d/turn-1", "local engine"} {
		if !strings.Contains(app.Error(), want) {
			t.Errorf("the refusal %q does not say %q", app.Error(), want)
		}
	}
	if n := gittest.Git(t, clone, "rev-list", "--count", in.Worktree.Start+"..walkie/d/turn-1"); n != "1" {
		t.Fatalf("the refused commits are not kept on the branch (%s commits)", n)
	}
	noTreesLeft(t, w, clone)
}

// A turn the worker has no clone for, or whose start its clone cannot
// get, is bad input naming the fix, and leaves nothing behind.
func TestTurnInAWorktreeWithoutTheRepository(t *testing.T) {
	w, _, clone, in := worktreeSetup(t, `[true]`)
	var app *temporalsdk.ApplicationError
	repos := w.repos
	w.repos = nil
	if _, err := runTurnActivity(t, w, in, nil); !errors.As(err, &app) || app.Type() != ErrTypeBadInput || !strings.Contains(app.Error(), "start it with --repo PATH") {
		t.Fatalf("error %v, want bad input asking for --repo", err)
	}
	other := t.TempDir()
	gittest.Git(t, other, "init", "--quiet", "--initial-branch=main")
	gittest.Commit(t, other, "other.txt", "another project\n", "first")
	w.repos, _ = openRepos(t.Context(), []string{other})
	if _, err := runTurnActivity(t, w, in, nil); !errors.As(err, &app) || !strings.Contains(app.Error(), "none of this worker's --repo ("+other+")") {
		t.Fatalf("error %v, want bad input naming the clones it has", err)
	}
	w.repos = repos
	missing := in
	wt := *in.Worktree
	wt.Start = strings.Repeat("ab", 20)
	missing.Worktree = &wt
	if _, err := runTurnActivity(t, w, missing, nil); !errors.As(err, &app) || app.Type() != ErrTypeBadInput || !strings.Contains(app.Error(), "lacks, and git fetch origin did not bring it") {
		t.Fatalf("error %v, want bad input for a start the clone cannot fetch", err)
	}
	wt.Branch = "main"
	wt.Start = in.Worktree.Start
	if _, err := runTurnActivity(t, w, missing, nil); !errors.As(err, &app) || !strings.Contains(app.Error(), "not a turn's branch") {
		t.Fatalf("error %v, want a branch other than a turn's refused", err)
	}
	noTreesLeft(t, w, clone)
}

// A worker killed while a session ran in a worktree leaves it; the next
// start removes it and its branch, with the session's processes.
func TestWorkerStartRemovesWorktreesLeftBehind(t *testing.T) {
	w, _, clone, in := worktreeSetup(t, `[true]`)
	dir := filepath.Join(w.o.Dir, "d", "0001-alice-1.1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tr, err := w.makeTree(t.Context(), dir, in)
	if err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, tr.Path, "half.go", "package half\n", "half done")
	w.cleanStale()
	noTreesLeft(t, w, clone)
	if out := gittest.Git(t, clone, "branch", "--list", "walkie/*"); out != "" {
		t.Fatalf("the dead attempt's branch stays: %s", out)
	}
}
