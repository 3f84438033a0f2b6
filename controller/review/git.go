package review

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/walkie-sh/walkie/gitrepo"
)

// git runs git in dir, as gitrepo runs every git of walkie's (no hooks,
// no prompts, an allow-listed environment), and returns its standard
// output; a failure is a *gitrepo.GitError with what git said.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return gitrepo.Run(ctx, dir, args...)
}

// repoRoot is the top of the work tree holding dir.
func repoRoot(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// resolveCommit is the full hash of the commit rev names, or "" when it
// names none.
func resolveCommit(ctx context.Context, root, rev string) (string, error) {
	out, err := git(ctx, root, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if gitrepo.ExitCode(err) == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// mergeBase is the best common ancestor of a and b, or "" when they have
// none (unrelated histories, or a shallow clone that lacks it).
func mergeBase(ctx context.Context, root, a, b string) (string, error) {
	out, err := git(ctx, root, "merge-base", a, b)
	if gitrepo.ExitCode(err) == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// changedFiles lists the files that exist at head and differ from base,
// as paths from the top of the repository, limited to the pathspecs
// given (none: every file). A rename counts as a new file.
func changedFiles(ctx context.Context, root, base, head string, pathspecs ...string) ([]string, error) {
	args := []string{"diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", base, head, "--"}
	out, err := git(ctx, root, append(args, pathspecs...)...)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range bytes.Split(out, []byte{0}) {
		if len(f) > 0 {
			files = append(files, string(f))
		}
	}
	return files, nil
}

// fileDiff is the diff of one file between base and head.
func fileDiff(ctx context.Context, root, base, head, path string) ([]byte, error) {
	return git(ctx, root, "diff", "--no-color", "--no-ext-diff", "--no-renames", "--no-textconv", base, head, "--", literal(path))
}

// blobSize is the size in bytes of path at commit, or -1 when commit has
// no file there.
func blobSize(ctx context.Context, root, commit, path string) (int64, error) {
	out, err := git(ctx, root, "ls-tree", "-z", "--long", commit, "--", literal(path))
	if err != nil {
		return 0, err
	}
	// "<mode> SP <type> SP <object> SP+ <size> TAB <path> NUL"
	meta, _, ok := bytes.Cut(out, []byte{'\t'})
	if !ok {
		return -1, nil
	}
	f := strings.Fields(string(meta))
	if len(f) != 4 || f[1] != "blob" {
		return -1, nil
	}
	var n int64
	if _, err := fmt.Sscan(f[3], &n); err != nil {
		return 0, fmt.Errorf("git ls-tree %s %s: size %q: %w", commit, path, f[3], err)
	}
	return n, nil
}

// showFile is the content of path at commit.
func showFile(ctx context.Context, root, commit, path string) ([]byte, error) {
	return git(ctx, root, "cat-file", "blob", commit+":"+path)
}

// statusSnapshot is `git status` of the work tree, leaving out exclude (a
// path from the top, "" for none): compared before and after a review, it
// shows whether anything changed the checkout.
func statusSnapshot(ctx context.Context, root, exclude string) (string, error) {
	args := []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=no", "--", "."}
	if exclude != "" {
		args = append(args, ":(exclude,literal)"+exclude)
	}
	out, err := git(ctx, root, args...)
	return string(out), err
}

// literal makes path a pathspec that matches only itself: a file named
// "*.md" must not match every markdown file.
func literal(path string) string { return ":(literal)" + path }

// isPattern reports whether a DOC argument is a glob rather than a path.
func isPattern(s string) bool { return strings.ContainsAny(s, "*?[") }
