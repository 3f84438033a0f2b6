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
	"time"

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
	if err != nil {
		return Committed{}, err
	}
	sigs, err := readSigLines(d.File)
	if err != nil {
		return Committed{}, fmt.Errorf("commit the record: %w", err)
	}
	sigRel := rel + walkie.SignaturesSuffix
	last := 0
	if n := len(d.Entries); n > 0 {
		last = d.Entries[n-1].Marker.Seq
	}
	wantSigs := sigs.upTo(last)
	if done == len(d.Entries) && (wantSigs == nil || bytes.Equal(r.blobAt(ctx, head, sigRel), wantSigs)) {
		return Committed{}, nil
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
		files := []file{{rel, data[:end]}}
		if s := sigs.upTo(e.Marker.Seq); s != nil {
			files = append(files, file{sigRel, s})
		}
		c, err := r.commitFiles(ctx, env, files, parent, CommitMessage(d.Meta.ID, e), e.Agent, e.Marker.At)
		if err != nil {
			return Committed{}, fmt.Errorf("commit entry %d: %w", e.Marker.Seq, err)
		}
		out.Commits, out.Seqs = append(out.Commits, c), append(out.Seqs, e.Marker.Seq)
		parent = c
	}
	if done == len(d.Entries) {
		// Only signatures are new: of entries already committed.
		e := &d.Entries[len(d.Entries)-1]
		c, err := r.commitFiles(ctx, env, []file{{sigRel, wantSigs}}, parent, signaturesMessage(d.Meta.ID, e, sigs.count(last)), "walkie", time.Now())
		if err != nil {
			return Committed{}, fmt.Errorf("commit the signatures: %w", err)
		}
		out.Commits, parent = append(out.Commits, c), c
	}
	// HEAD moves only if it is still where the commits were built on.
	if _, err := r.run(ctx, nil, nil, "update-ref", "-m", "walkie: record entries", "HEAD", parent, head); err != nil {
		return Committed{}, &raceError{fmt.Errorf("commit the record: HEAD moved while it was committed: %w", err)}
	}
	// The caller's index learns the committed version, so `git status`
	// does not show the record as changed.
	args := []string{"reset", "--quiet", "HEAD", "--", rel}
	if wantSigs != nil {
		args = append(args, sigRel)
	}
	if _, err := r.run(ctx, nil, nil, args...); err != nil {
		return out, fmt.Errorf("commit the record: update the index: %w", err)
	}
	return out, nil
}

// sigLines are the lines of a record's signatures file, each with the
// seq of the entry it signs, in the order they were written.
type sigLines []struct {
	seq  int
	line []byte
}

// readSigLines reads the signatures file beside file (none: nil).
func readSigLines(file string) (sigLines, error) {
	data, err := os.ReadFile(walkie.SignaturesPath(file))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out sigLines
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		sigs, err := walkie.ParseSignatures(walkie.SignaturesPath(file), l)
		if err != nil {
			return nil, err
		}
		if len(sigs) == 1 && bytes.HasSuffix(l, []byte("\n")) { // a torn last line waits
			out = append(out, struct {
				seq  int
				line []byte
			}{sigs[0].Seq, l})
		}
	}
	return out, nil
}

// upTo is the file as it holds the signatures of entries up to seq,
// nil when it holds none.
func (s sigLines) upTo(seq int) []byte {
	var b []byte
	for _, l := range s {
		if l.seq <= seq {
			b = append(b, l.line...)
		}
	}
	return b
}

func (s sigLines) count(seq int) int {
	n := 0
	for _, l := range s {
		if l.seq <= seq {
			n++
		}
	}
	return n
}

// blobAt is the content of path at commit, nil when it has none.
func (r *Repo) blobAt(ctx context.Context, commit, path string) []byte {
	if commit == "" {
		return nil
	}
	b, err := r.run(ctx, nil, nil, "cat-file", "blob", commit+":"+path)
	if err != nil {
		return nil
	}
	return b
}

// committedEntries is how many of the record's entries the version of it
// at head holds (0 when head holds none of it).
func (r *Repo) committedEntries(ctx context.Context, d *walkie.Doc, data []byte, head, rel string) (int, error) {
	if head == "" {
		return 0, nil
	}
	blob, err := r.run(ctx, nil, nil, "cat-file", "blob", head+":"+rel)
	if err != nil {
		if ExitCode(err) == 128 {
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

// file is one file of a commit: its path from the top and content.
type file struct {
	rel  string
	data []byte
}

// commitFiles commits files (in the private index env names) on top of
// parent, authored by author at at.
func (r *Repo) commitFiles(ctx context.Context, env []string, files []file, parent, msg, author string, at time.Time) (string, error) {
	for _, f := range files {
		blob, err := r.run(ctx, env, bytes.NewReader(f.data), "hash-object", "-w", "--stdin")
		if err != nil {
			return "", err
		}
		if _, err := r.run(ctx, env, nil, "update-index", "--add", "--cacheinfo", "100644,"+strings.TrimSpace(string(blob))+","+f.rel); err != nil {
			return "", err
		}
	}
	tree, err := r.run(ctx, env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"commit-tree", strings.TrimSpace(string(tree))}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	env = append(env, "GIT_AUTHOR_NAME="+author, "GIT_AUTHOR_EMAIL="+author+"@walkie.invalid",
		fmt.Sprintf("GIT_AUTHOR_DATE=%d +0000", at.Unix()))
	c, err := r.run(ctx, env, strings.NewReader(msg), args...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(c)), nil
}

// signaturesMessage is the message of a commit that adds only
// signatures, of entries up to e: the trailers say whose record, how many
// signatures it holds, and the hash of the last entry.
func signaturesMessage(id string, e *walkie.Entry, n int) string {
	return fmt.Sprintf("%s · signatures up to #%d\n\nWalkie-Debate: %s\nWalkie-Signatures: %d\nWalkie-Hash: %s\n", id, e.Marker.Seq, id, n, e.Marker.Hash)
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
		// Abbreviated as people read them; the trailers keep full ids.
		var refs []string
		for _, r := range t.Refs {
			r.SHA = short(r.SHA)
			refs = append(refs, r.String())
		}
		subject = append(subject, strings.Join(refs, ", "))
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
