// Package gitrepo asks and changes the git repository a walkie record is
// bound to, through the git command: it resolves an entry's refs (a
// walkie.RefResolver), makes and removes the worktrees agents' sessions
// run in, and commits the record, one commit per entry. It is the one
// place walkie runs git (Command, Run): every command names the
// repository by its top directory and runs with one policy (run.go): an
// allow-listed environment, no hooks or other programs of the
// repository's, no prompts, bound to its context.
package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/walkie-sh/walkie/walkie"
)

// ErrNotRepo is returned for a directory that is not in a git work tree.
var ErrNotRepo = errors.New("not a git repository")

// Repo is a git work tree.
type Repo struct {
	// Root is the work tree's top directory.
	Root string
}

// Open finds the work tree dir is in.
func Open(ctx context.Context, dir string) (*Repo, error) {
	r := &Repo{Root: dir}
	out, err := r.output(ctx, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotRepo)
		}
		return nil, err
	}
	r.Root = strings.TrimSpace(out)
	if r.Root == "" {
		return nil, fmt.Errorf("%s: %w (a bare repository has no work tree)", dir, ErrNotRepo)
	}
	return r, nil
}

// run runs git in the work tree with extra environment and input.
func (r *Repo) run(ctx context.Context, env []string, stdin io.Reader, args ...string) ([]byte, error) {
	return run(ctx, r.Root, env, stdin, args...)
}

func (r *Repo) output(ctx context.Context, env []string, args ...string) (string, error) {
	b, err := r.run(ctx, env, nil, args...)
	return string(b), err
}

// revParse is the full sha rev names, "" when it names no commit.
func (r *Repo) revParse(ctx context.Context, rev string) (string, error) {
	out, err := r.output(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		if ExitCode(err) == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Commit is the full sha of the commit sha names, "" when none. An
// abbreviated sha that more than one commit starts with names none of
// them: the error wraps walkie.ErrAmbiguous and lists them.
func (r *Repo) Commit(ctx context.Context, sha string) (string, error) {
	full, err := r.revParse(ctx, sha)
	if err != nil || full != "" || len(sha) >= 40 {
		return full, err
	}
	// git says "no such commit" for an ambiguous one too: ask which
	// objects start so, and how many are commits.
	out, err := r.output(ctx, nil, "rev-parse", "--disambiguate="+sha)
	if err != nil || strings.TrimSpace(out) == "" {
		return "", nil
	}
	types, err := r.run(ctx, nil, strings.NewReader(out), "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return "", err
	}
	var commits []string
	for _, l := range strings.Split(string(types), "\n") {
		if id, typ, _ := strings.Cut(l, " "); typ == "commit" {
			commits = append(commits, short(id))
		}
	}
	if len(commits) > 1 {
		return "", fmt.Errorf("%w: %s is the start of %d commits (%s)", walkie.ErrAmbiguous, sha, len(commits), strings.Join(commits, ", "))
	}
	return "", nil
}

// branchRef is the ref a branch name stands for: a local branch, else a
// remote-tracking one (origin/main); "" when neither exists.
func (r *Repo) branchRef(ctx context.Context, branch string) (ref, sha string, err error) {
	for _, ref := range []string{"refs/heads/" + branch, "refs/remotes/" + branch} {
		sha, err := r.revParse(ctx, ref)
		if err != nil || sha != "" {
			return ref, sha, err
		}
	}
	return "", "", nil
}

// Head is the full sha branch points to, "" when there is no such branch.
func (r *Repo) Head(ctx context.Context, branch string) (string, error) {
	_, sha, err := r.branchRef(ctx, branch)
	return sha, err
}

// Contains reports whether commit is in branch's history.
func (r *Repo) Contains(ctx context.Context, branch, commit string) (bool, error) {
	ref, _, err := r.branchRef(ctx, branch)
	if err != nil || ref == "" {
		return false, err
	}
	_, err = r.output(ctx, nil, "merge-base", "--is-ancestor", commit, ref)
	switch ExitCode(err) {
	case -1:
		return err == nil, err
	case 1:
		return false, nil
	}
	return false, err
}

// HasPath reports whether path is in the work tree, or in one of commits.
func (r *Repo) HasPath(ctx context.Context, path string, commits []string) (bool, error) {
	if _, err := os.Lstat(filepath.Join(r.Root, filepath.FromSlash(path))); err == nil {
		return true, nil
	}
	for _, c := range commits {
		_, err := r.output(ctx, nil, "cat-file", "-e", c+":"+path)
		switch ExitCode(err) {
		case -1:
			if err == nil {
				return true, nil
			}
			return false, err
		case 128, 1:
			continue // not in that commit
		default:
			return false, err
		}
	}
	return false, nil
}

// Unchanged reports whether to is from, or descends from it with nothing
// changed but walkie records: the files named *.walkie.md, their
// signatures (*.walkie.md.sig) and what lies under a .walkie directory.
func (r *Repo) Unchanged(ctx context.Context, from, to string) (bool, error) {
	if from == to {
		return true, nil
	}
	_, err := r.output(ctx, nil, "merge-base", "--is-ancestor", from, to)
	switch ExitCode(err) {
	case -1:
		if err != nil {
			return false, err
		}
	case 1:
		return false, nil
	default:
		return false, err
	}
	out, err := r.output(ctx, nil, "diff", "--name-only", "--no-renames", "-z", from, to)
	if err != nil {
		return false, err
	}
	for _, p := range strings.Split(out, "\x00") {
		if p != "" && !recordPath(p) {
			return false, nil
		}
	}
	return true, nil
}

// recordPath reports whether a path in the repository is walkie's: a
// record, or a side file beside one.
func recordPath(p string) bool {
	if strings.HasSuffix(p, walkie.FileSuffix) || strings.HasSuffix(p, walkie.FileSuffix+walkie.SignaturesSuffix) {
		return true
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".walkie" {
			return true
		}
	}
	return false
}

// Resolver is the repository as a walkie.RefResolver, asked within ctx.
func (r *Repo) Resolver(ctx context.Context) Resolver { return Resolver{ctx: ctx, r: r} }

// Resolver answers walkie's questions about refs (walkie.RefResolver).
type Resolver struct {
	ctx context.Context
	r   *Repo
}

// Commit implements walkie.RefResolver.
func (v Resolver) Commit(sha string) (string, error) { return v.r.Commit(v.ctx, sha) }

// Head implements walkie.RefResolver.
func (v Resolver) Head(branch string) (string, error) { return v.r.Head(v.ctx, branch) }

// Contains implements walkie.RefResolver.
func (v Resolver) Contains(branch, commit string) (bool, error) {
	return v.r.Contains(v.ctx, branch, commit)
}

// HasPath implements walkie.RefResolver.
func (v Resolver) HasPath(path string, commits []string) (bool, error) {
	return v.r.HasPath(v.ctx, path, commits)
}

// Unchanged implements walkie.RefResolver.
func (v Resolver) Unchanged(from, to string) (bool, error) { return v.r.Unchanged(v.ctx, from, to) }

// FileAt is the content of path (from the top) at rev. A rev that names
// no commit is an error; a commit without the file is fs.ErrNotExist.
func (r *Repo) FileAt(ctx context.Context, rev, path string) ([]byte, error) {
	commit, err := r.Commit(ctx, rev)
	if err != nil {
		return nil, err
	}
	if commit == "" {
		return nil, fmt.Errorf("%s names no commit in %s", rev, r.Root)
	}
	b, err := r.run(ctx, nil, nil, "cat-file", "blob", commit+":"+path)
	if ExitCode(err) == 128 {
		return nil, fmt.Errorf("%s at %s: %w", path, short(commit), fs.ErrNotExist)
	}
	return b, err
}
