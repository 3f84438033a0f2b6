package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/walkie-sh/walkie/walkie"
)

// The record as git's audit log (`git: commit`): every recorded entry is
// a commit of the walkie file holding the record as it stood right after
// that entry, so `git log FILE` reads as the debate's hansard and `git
// show` of any commit is the record at that moment. The record is
// append-only, so the record after entry k is a prefix of the file: an
// entry written by any process (a post, the controller, a queued note) is
// committed by whichever of them commits next, in order, each as it was.
// Only the walkie file goes into the commits, through a private index;
// the caller's staged changes and work tree are left as they are.

// IgnoreRule is the .gitignore walkie writes into a .walkie directory: its
// side files (state, doorbell, transcripts, worktrees) never belong in git.
const IgnoreRule = "# walkie's side files: state, doorbell, transcripts, worktrees (never part of the record)\n*\n"

// WriteIgnore writes the ignore rule into the .walkie directory beside
// file, unless one is there.
func WriteIgnore(file string) error {
	dir := filepath.Join(filepath.Dir(file), ".walkie")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, ".gitignore")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.WriteString(IgnoreRule); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// Committed is what CommitEntries did.
type Committed struct {
	Commits []string // the new commits, oldest first
	Seqs    []int    // the entry each one records
}

// CommitEntries commits every entry of the record not yet in the
// history of the work tree's HEAD, one commit each, and moves HEAD (its
// branch) to the last. The file must verify; a committed record that is
// not a prefix of the file (it was edited) is an error, and nothing is
// committed.
func CommitEntries(ctx context.Context, file string) (Committed, error) {
	// git runs at the repository's top: a path relative to the caller's
	// directory (walkie post from a subdirectory) would name the private
	// index somewhere else.
	file, err := filepath.Abs(file)
	if err != nil {
		return Committed{}, fmt.Errorf("commit the record: %w", err)
	}
	d, err := walkie.Load(file)
	if err != nil {
		return Committed{}, err
	}
	var torn *walkie.TornTailError
	if err := d.Verify(); err != nil && !errors.As(err, &torn) {
		return Committed{}, fmt.Errorf("commit the record: %w", err)
	}
	if err := WriteIgnore(file); err != nil {
		return Committed{}, err
	}
	lock, err := walkie.LockFile(ctx, filepath.Join(walkie.StateDir(file, d.Meta.ID), "git.lock"))
	if err != nil {
		return Committed{}, fmt.Errorf("commit the record: %w", err)
	}
	defer lock.Unlock()
	r, err := Open(ctx, filepath.Dir(file))
	if err != nil {
		return Committed{}, err
	}
	rel, err := relPath(r.Root, file)
	if err != nil {
		return Committed{}, err
	}
	data := d.Render()
	// Another process may move HEAD between our read and our update: the
	// update names the HEAD it built on, and a lost race builds again.
	for try := 0; ; try++ {
		c, err := r.commitEntries(ctx, d, data, rel)
		var lost *raceError
		if errors.As(err, &lost) && try < 3 {
			continue
		}
		return c, err
	}
}

// raceError is HEAD moving while the commits were built.
type raceError struct{ err error }

func (e *raceError) Error() string { return e.err.Error() }

func (r *Repo) commitEntries(ctx context.Context, d *walkie.Doc, data []byte, rel string) (Committed, error) {
	head, err := r.revParse(ctx, "HEAD")
	if err != nil {
		return Committed{}, err
	}
	done, err := r.committedEntries(ctx, d, data, head, rel)
	if err != nil || done == len(d.Entries) {
		return Committed{}, err
	}
	index := filepath.Join(walkie.StateDir(d.File, d.Meta.ID), "git-index")
	defer os.Remove(index)
	env := append([]string{"GIT_INDEX_FILE=" + index}, committerEnv(ctx, r)...)
	if head == "" {
		_, err = r.run(ctx, env, nil, "read-tree", "--empty")
	} else {
		_, err = r.run(ctx, env, nil, "read-tree", head)
	}
	if err != nil {
		return Committed{}, fmt.Errorf("commit the record: %w", err)
	}
	var out Committed
	parent := head
	for k := done; k < len(d.Entries); k++ {
		e := &d.Entries[k]
		end := e.Offset + int64(len(e.Raw))
		c, err := r.commitPrefix(ctx, env, data[:end], rel, parent, d.Meta.ID, e)
		if err != nil {
			return Committed{}, fmt.Errorf("commit entry %d: %w", e.Marker.Seq, err)
		}
		out.Commits, out.Seqs = append(out.Commits, c), append(out.Seqs, e.Marker.Seq)
		parent = c
	}
	// HEAD moves only if it is still where the commits were built on.
	if _, err := r.run(ctx, nil, nil, "update-ref", "-m", "walkie: record entries", "HEAD", parent, head); err != nil {
		return Committed{}, &raceError{fmt.Errorf("commit the record: HEAD moved while it was committed: %w", err)}
	}
	// The caller's index learns the committed version, so `git status`
	// does not show the record as changed.
	if _, err := r.run(ctx, nil, nil, "reset", "--quiet", "HEAD", "--", rel); err != nil {
		return out, fmt.Errorf("commit the record: update the index: %w", err)
	}
	return out, nil
}

// committedEntries is how many of the record's entries the version of it
// at head holds (0 when head holds none of it).
func (r *Repo) committedEntries(ctx context.Context, d *walkie.Doc, data []byte, head, rel string) (int, error) {
	if head == "" {
		return 0, nil
	}
	blob, err := r.run(ctx, nil, nil, "cat-file", "blob", head+":"+rel)
	if err != nil {
		if exitCode(err) == 128 {
			return 0, nil // not in HEAD yet
		}
		return 0, err
	}
	old, err := walkie.Parse(d.File, blob)
	if err != nil {
		return 0, fmt.Errorf("the record committed at %s does not parse: %w", short(head), err)
	}
	n := len(old.Entries)
	end := int64(len(old.Header))
	if n > 0 {
		last := &old.Entries[n-1]
		end = last.Offset + int64(len(last.Raw))
	}
	if n > len(d.Entries) || !bytes.HasPrefix(data, blob[:end]) {
		return 0, fmt.Errorf("the record committed at %s is not the start of %s: one of them was changed by hand; nothing was committed (git diff %s -- %s shows how)",
			short(head), d.File, short(head), rel)
	}
	return n, nil
}

// commitPrefix commits data as rel on top of parent.
func (r *Repo) commitPrefix(ctx context.Context, env []string, data []byte, rel, parent, id string, e *walkie.Entry) (string, error) {
	blob, err := r.run(ctx, env, bytes.NewReader(data), "hash-object", "-w", "--stdin")
	if err != nil {
		return "", err
	}
	if _, err := r.run(ctx, env, nil, "update-index", "--add", "--cacheinfo", "100644,"+strings.TrimSpace(string(blob))+","+rel); err != nil {
		return "", err
	}
	tree, err := r.run(ctx, env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", strings.TrimSpace(string(tree))}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	author := e.Agent
	env = append(env, "GIT_AUTHOR_NAME="+author, "GIT_AUTHOR_EMAIL="+author+"@walkie.invalid",
		fmt.Sprintf("GIT_AUTHOR_DATE=%d +0000", e.Marker.At.Unix()))
	c, err := r.run(ctx, env, strings.NewReader(CommitMessage(id, e)), args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(c)), nil
}

// committerEnv names walkie as the committer when git knows nobody:
// the record's commits must not fail on a machine without user.name.
func committerEnv(ctx context.Context, r *Repo) []string {
	if _, err := r.run(ctx, nil, nil, "var", "GIT_COMMITTER_IDENT"); err == nil {
		return nil
	}
	return []string{"GIT_COMMITTER_NAME=walkie", "GIT_COMMITTER_EMAIL=walkie@walkie.invalid"}
}

// CommitMessage is the message of an entry's commit: a subject naming the
// debate, seq, author, type and refs; the entry's first line; trailers a
// script can read (git log --format=%(trailers)).
func CommitMessage(id string, e *walkie.Entry) string {
	t := e.Marker.Tags
	subject := []string{fmt.Sprintf("%s #%d", id, e.Marker.Seq)}
	if e.Kind == walkie.KindTurn {
		subject = append(subject, fmt.Sprintf("turn %d", e.Turn))
	}
	subject = append(subject, e.Agent)
	if t.Type != "" {
		subject = append(subject, t.Kind())
	}
	if len(t.Refs) > 0 {
		subject = append(subject, strings.Join(t.RefStrings(), ", "))
	}
	var b strings.Builder
	b.WriteString(strings.Join(subject, " · ") + "\n")
	if first := walkie.FirstLine(e); first != "" {
		b.WriteString("\n" + walkie.Clip(first, 72) + "\n")
	}
	fmt.Fprintf(&b, "\nWalkie-Debate: %s\nWalkie-Seq: %d\nWalkie-Author: %s\n", id, e.Marker.Seq, e.Agent)
	if t.Type != "" {
		fmt.Fprintf(&b, "Walkie-Type: %s\n", t.Kind())
	}
	for _, ref := range t.RefStrings() {
		fmt.Fprintf(&b, "Walkie-Ref: %s\n", ref)
	}
	fmt.Fprintf(&b, "Walkie-Hash: %s\n", e.Marker.Hash)
	return b.String()
}

// relPath is file relative to the work tree's top, with slashes; both
// have their links resolved, so a checkout under a linked directory works.
func relPath(root, file string) (string, error) {
	rr, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	ff, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	if ff, err = filepath.EvalSymlinks(ff); err != nil {
		return "", err
	}
	rel, err := filepath.Rel(rr, ff)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is not inside the git work tree %s", file, root)
	}
	return filepath.ToSlash(rel), nil
}

func short(sha string) string { return sha[:min(len(sha), 12)] }
