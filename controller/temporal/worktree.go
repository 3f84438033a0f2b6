package temporal

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	temporalsdk "go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/temporal/blob"
	"github.com/walkie-sh/walkie/gitrepo"
)

// A turn of a debate with workspace: worktree runs, on a worker, in a
// worktree of the worker's own clone of the debate's repository (its
// --repo), at the commit the home resolved and on the turn's branch, as
// the loop runs it in the home's repository. What the session committed
// goes home as a git bundle, and the home makes it the turn's branch.

// MaxBundleBytes caps the bundle of a turn's commits, which travels by
// reference like any large file (a Blob).
const MaxBundleBytes = blob.Max

// treeFile, in an attempt's directory, names the worktree the attempt
// made, written before it is made: a worker killed mid-turn leaves enough
// for its next start to remove it.
const treeFile = "worktree.json"

// gitTree is a worktree one attempt's session runs in.
type gitTree struct {
	Repo, Path, Branch string
	start              string
	repo               *gitrepo.Repo
	done               bool // removed, and its commits gathered or refused
	// guard is the clone as the session must leave it outside its
	// debate's branches: what it plants there must not stay for the next
	// turn, or the person who keeps the clone.
	guard *gitrepo.Guard
}

// openRepos opens the worker's clones (--repo).
func openRepos(ctx context.Context, paths []string) ([]*gitrepo.Repo, error) {
	var out []*gitrepo.Repo
	for _, p := range paths {
		r, err := gitrepo.Open(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("--repo %s: %w (give the work tree of a clone of the debates' repository)", p, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// clone is the worker's clone of the repository wt is in: the first
// --repo that has one of its first commits.
func (w *Worker) clone(ctx context.Context, wt *controller.Worktree) (*gitrepo.Repo, error) {
	for _, r := range w.repos {
		for _, root := range wt.Roots {
			if sha, err := r.Commit(ctx, root); err == nil && sha != "" {
				return r, nil
			}
		}
	}
	what := "the repository whose first commit is " + strings.Join(wt.Roots, ", ")
	if wt.Origin != "" {
		what = wt.Origin + " (" + what + ")"
	}
	if len(w.repos) == 0 {
		return nil, fmt.Errorf("the turn runs in a git worktree of %s, and this worker has no clone: start it with --repo PATH, a clone of that repository", what)
	}
	var have []string
	for _, r := range w.repos {
		have = append(have, r.Root)
	}
	return nil, fmt.Errorf("the turn runs in a git worktree of %s, and none of this worker's --repo (%s) is a clone of it: add --repo PATH of one", what, strings.Join(have, ", "))
}

// makeTree makes the worktree of the turn in the worker's clone, in the
// attempt's directory dir; nil for a turn that runs in none.
func (w *Worker) makeTree(ctx context.Context, dir string, in TurnInput) (*gitTree, error) {
	wt := in.Worktree
	if wt == nil {
		return nil, nil
	}
	if !strings.HasPrefix(wt.Branch, "walkie/") || strings.Contains(wt.Branch, "..") || !isHex(wt.Start) {
		return nil, w.badInput(fmt.Errorf("the turn's worktree is on %q at %q: not a turn's branch and commit", wt.Branch, wt.Start))
	}
	repo, err := w.clone(ctx, wt)
	if err != nil {
		return nil, w.badInput(err)
	}
	ok, err := repo.FetchCommit(ctx, wt.Start)
	if err != nil || !ok {
		why := "git fetch origin did not bring it"
		if err != nil {
			why = err.Error()
		}
		return nil, w.badInput(fmt.Errorf("the turn starts at %s, which the clone %s lacks, and %s: push it where that clone's origin serves it, or point --repo at a clone that has it", wt.Start, repo.Root, why))
	}
	t := &gitTree{Repo: repo.Root, Path: filepath.Join(dir, "tree"), Branch: wt.Branch, start: wt.Start, repo: repo}
	b, _ := json.Marshal(t)
	if err := os.WriteFile(filepath.Join(dir, treeFile), b, 0o644); err != nil {
		return nil, fmt.Errorf("note the worktree: %w", err)
	}
	// What an earlier delivery of this attempt left at the path goes
	// first.
	if err := repo.RemoveWorktree(ctx, t.Path); err != nil {
		return nil, err
	}
	if t.guard, err = repo.Guard(ctx, controller.SessionRefs(t.Branch)); err != nil {
		return nil, err
	}
	if err := repo.AddWorktree(ctx, t.Path, t.Branch, t.start); err != nil {
		return nil, err
	}
	return t, nil
}

// restore puts back what the session changed in the clone outside its
// debate's branches, and says it as the turn's tampered detail ("" when
// nothing). A no-op once done.
func (w *Worker) restore(ctx context.Context, t *gitTree) string {
	if t.guard == nil {
		return ""
	}
	changed, err := t.repo.Restore(ctx, t.guard)
	t.guard = nil
	if len(changed) == 0 && err == nil {
		return ""
	}
	detail := fmt.Sprintf("the session changed worker %s's clone %s outside its branches (%s*): %s; the worker put it back",
		w.identity, t.Repo, strings.TrimPrefix(controller.SessionRefs(t.Branch), "refs/heads/"), strings.Join(changed, ", "))
	if err != nil {
		detail += fmt.Sprintf(" as far as it could (%v)", err)
	}
	w.log.Warn("a worktree session changed the clone", zap.String("repo", t.Repo), zap.String("detail", detail))
	return detail
}

// finish removes the worktree and gathers what the session committed on
// its branch: the head, and the commits since the start as a bundle of
// at most MaxBundleBytes. The branch leaves the clone once its commits
// are on their way; over the cap it stays, and the error says where.
func (w *Worker) finish(ctx context.Context, t *gitTree, dir string) (*controller.Commits, *Blob, error) {
	if t == nil || t.done {
		return nil, nil, nil
	}
	ctx = context.WithoutCancel(ctx) // an interrupted session still cleans up
	tampered := w.restore(ctx, t)
	head, herr := t.repo.Head(ctx, t.Branch)
	if err := t.repo.RemoveWorktree(ctx, t.Path); err != nil {
		return nil, nil, err // the note stays: the next start removes it
	}
	_ = os.Remove(filepath.Join(dir, treeFile))
	t.done = true
	if herr != nil {
		return nil, nil, herr
	}
	c := &controller.Commits{Branch: t.Branch, Start: t.start, Head: head, Tampered: tampered}
	var bundle *Blob
	if head != "" && head != t.start {
		limit := cmp.Or(w.bundleMax, MaxBundleBytes)
		b, err := t.repo.Bundle(ctx, t.Branch, t.start, limit)
		if tl := (*gitrepo.BundleTooLargeError)(nil); errors.As(err, &tl) {
			return nil, nil, temporalsdk.NewNonRetryableApplicationError(fmt.Sprintf(
				"worker %s: %v (%d bytes at most): the commits are kept in the worker's clone %s as %s; fetch them from there, or run this debate on the local engine",
				w.identity, err, limit, t.Repo, t.Branch), ErrTypeTooLarge, nil)
		}
		if err != nil {
			return nil, nil, err
		}
		blob, err := w.carry.putBytes(ctx, b)
		if err != nil {
			return nil, nil, fmt.Errorf("the turn's commits: %w", err)
		}
		bundle = &blob
	}
	if head != "" {
		if err := t.repo.DeleteBranch(ctx, t.Branch); err != nil {
			w.log.Warn("the turn's branch was not deleted from the worker's clone", zap.String("repo", t.Repo), zap.Error(err))
		}
	}
	return c, bundle, nil
}

// drop removes the worktree and its branch of an attempt that returns
// no result (the session could not run, or its result cannot travel):
// the turn runs again elsewhere, from the start. A no-op once finished.
func (w *Worker) drop(ctx context.Context, t *gitTree, dir string) {
	if t == nil || t.done {
		return
	}
	ctx = context.WithoutCancel(ctx)
	w.restore(ctx, t)
	if err := t.repo.RemoveWorktree(ctx, t.Path); err != nil {
		w.log.Warn("the turn's worktree was not removed; the worker's next start removes it", zap.String("path", t.Path), zap.Error(err))
		return
	}
	_ = os.Remove(filepath.Join(dir, treeFile))
	t.done = true
	_ = t.repo.DeleteBranch(ctx, t.Branch)
}

// cleanTrees removes the worktrees attempts of a worker that died left,
// and their branches: their turns were given to other workers by then.
func (w *Worker) cleanTrees(ctx context.Context) {
	matches, _ := filepath.Glob(filepath.Join(w.o.Dir, "*", "*", treeFile))
	for _, m := range matches {
		var t gitTree
		b, err := os.ReadFile(m)
		if err != nil || json.Unmarshal(b, &t) != nil || t.Path == "" {
			_ = os.Remove(m)
			continue
		}
		repo, err := gitrepo.Open(ctx, t.Repo)
		if err != nil {
			// The clone is gone, and with it what git knew of the
			// worktree: its directory is the worker's to remove.
			err = os.RemoveAll(t.Path)
		} else if err = repo.RemoveWorktree(ctx, t.Path); err == nil && t.Branch != "" {
			_ = repo.DeleteBranch(ctx, t.Branch) // never made, if the worker died before
		}
		if err != nil {
			w.log.Warn("cannot remove a worktree left by an earlier worker", zap.String("path", t.Path), zap.Error(err))
			continue
		}
		w.log.Warn("removed a worktree left by an earlier worker", zap.String("path", t.Path), zap.String("repo", t.Repo))
		_ = os.Remove(m)
	}
}

func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
