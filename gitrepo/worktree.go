package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// AddWorktree makes a worktree at path on a new branch started at start,
// which must name a commit. A branch of that name left by an earlier
// attempt of the same turn starts afresh there (its commits stay in the
// reflog).
func (r *Repo) AddWorktree(ctx context.Context, path, branch, start string) error {
	if _, err := r.run(ctx, nil, nil, "worktree", "add", "--quiet", "-B", branch, "--end-of-options", path, start); err != nil {
		return fmt.Errorf("create worktree %s on %s at %s: %w", path, branch, start, err)
	}
	return nil
}

// RemoveWorktree removes the worktree at path, whatever is in it
// (uncommitted changes are the session's, and go with it), and prunes
// what git knows of it. A path that is already gone is no error: a crash
// may have come between the two.
func (r *Repo) RemoveWorktree(ctx context.Context, path string) error {
	_, err := r.run(ctx, nil, nil, "worktree", "remove", "--force", "--force", path)
	if err != nil {
		// Not a worktree (any more): what is left on disk goes, and git
		// forgets it.
		if rerr := os.RemoveAll(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return fmt.Errorf("remove worktree %s: %w (after %v)", path, rerr, err)
		}
	}
	if _, err := r.run(ctx, nil, nil, "worktree", "prune"); err != nil {
		return fmt.Errorf("prune worktrees: %w", err)
	}
	return nil
}

// DeleteBranch deletes a local branch, merged or not.
func (r *Repo) DeleteBranch(ctx context.Context, branch string) error {
	if _, err := r.run(ctx, nil, nil, "branch", "--quiet", "-D", "--end-of-options", branch); err != nil {
		return fmt.Errorf("delete branch %s: %w", branch, err)
	}
	return nil
}

// Worktrees lists the paths of the repository's worktrees, the main one
// first.
func (r *Repo) Worktrees(ctx context.Context) ([]string, error) {
	out, err := r.output(ctx, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// AddDetached makes a worktree at path checked out at commit, on no
// branch: a place to run something at a commit and throw away.
func (r *Repo) AddDetached(ctx context.Context, path, commit string) error {
	if _, err := r.run(ctx, nil, nil, "worktree", "add", "--quiet", "--detach", "--end-of-options", path, commit); err != nil {
		return fmt.Errorf("create worktree %s at %s: %w", path, commit, err)
	}
	return nil
}
