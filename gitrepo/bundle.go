package gitrepo

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// What a worktree's session committed travels between clones of one
// repository as a git bundle: the commits of a branch since the commit
// it started at, which the receiving clone has.

// BundleTooLargeError refuses a bundle over its cap: it is never cut.
type BundleTooLargeError struct {
	Branch      string
	Size, Limit int64
}

func (e *BundleTooLargeError) Error() string {
	return fmt.Sprintf("the commits of %s make a bundle of %d bytes, over the cap of %d", e.Branch, e.Size, e.Limit)
}

// Bundle is the commits of branch since base (which must be in its
// history) as an incremental git bundle holding the branch's ref; a
// bundle over limit bytes is a *BundleTooLargeError.
func (r *Repo) Bundle(ctx context.Context, branch, base string, limit int64) ([]byte, error) {
	f, err := os.CreateTemp("", "walkie-*.bundle")
	if err != nil {
		return nil, err
	}
	path := f.Name()
	f.Close()
	defer os.Remove(path)
	if _, err := r.run(ctx, nil, nil, "bundle", "create", "--quiet", path, "refs/heads/"+branch, "^"+base); err != nil {
		return nil, fmt.Errorf("bundle %s since %s: %w", branch, base, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, &BundleTooLargeError{Branch: branch, Size: fi.Size(), Limit: limit}
	}
	return os.ReadFile(path)
}

// Unbundle makes branch of this repository the branch of that name in
// bundle (made by Bundle in another clone), replacing what the branch
// held, and returns its new head. The bundle's base must be here.
func (r *Repo) Unbundle(ctx context.Context, bundle []byte, branch string) (string, error) {
	f, err := os.CreateTemp("", "walkie-*.bundle")
	if err != nil {
		return "", err
	}
	path := f.Name()
	defer os.Remove(path)
	_, err = f.Write(bundle)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	ref := "refs/heads/" + branch
	// Only the one ref comes in, whatever else the bundle names; forced,
	// as a retried turn's branch starts afresh.
	if _, err := r.run(ctx, nil, nil, "fetch", "--quiet", "--no-write-fetch-head", "--no-tags", "--end-of-options", path, "+"+ref+":"+ref); err != nil {
		return "", fmt.Errorf("unbundle %s: %w", branch, err)
	}
	return r.revParse(ctx, ref)
}

// SetBranch points branch at commit, making it if need be.
func (r *Repo) SetBranch(ctx context.Context, branch, commit string) error {
	if _, err := r.run(ctx, nil, nil, "branch", "--quiet", "--force", "--no-track", "--end-of-options", branch, commit); err != nil {
		return fmt.Errorf("set branch %s at %s: %w", branch, commit, err)
	}
	return nil
}

// Roots are the full shas of the commits without parents in commit's
// history: what every clone of the repository has, whatever else it
// lacks, so they tell one repository from another.
func (r *Repo) Roots(ctx context.Context, commit string) ([]string, error) {
	out, err := r.output(ctx, nil, "rev-list", "--max-parents=0", "--end-of-options", commit)
	if err != nil {
		return nil, fmt.Errorf("the first commits of %s: %w", commit, err)
	}
	return strings.Fields(out), nil
}

// Origin is the URL of the remote named origin, "" when there is none.
func (r *Repo) Origin(ctx context.Context) string {
	out, err := r.output(ctx, nil, "remote", "get-url", "origin")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// FetchCommit makes sure commit is in the repository, fetching it from
// origin when it is not: by its sha first, then (for a remote that
// refuses an unadvertised sha) everything origin's refs name. It
// reports whether the commit is here now.
func (r *Repo) FetchCommit(ctx context.Context, commit string) (bool, error) {
	if sha, err := r.revParse(ctx, commit); err != nil || sha != "" {
		return sha != "", err
	}
	_, byName := r.run(ctx, nil, nil, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "origin", commit)
	if byName != nil {
		if _, err := r.run(ctx, nil, nil, "fetch", "--quiet", "--no-tags", "origin"); err != nil {
			return false, fmt.Errorf("git fetch origin: %w (fetching %s itself: %v)", err, commit, byName)
		}
	}
	sha, err := r.revParse(ctx, commit)
	return sha != "", err
}
