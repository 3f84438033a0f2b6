package roundtable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/walkie"
)

// A workspace is frozen as a manifest (every file and symlink with its
// mode and content hash, sorted by path) and a snapshot copy. The hash of
// the manifest names the state reviewers and the grader judged.

// wsEntry is one file or symlink of a workspace.
type wsEntry struct {
	Path string      `json:"path"` // slash-separated, relative to the root
	Link bool        `json:"link,omitempty"`
	Mode fs.FileMode `json:"mode,omitempty"` // permission bits of a file
	Size int64       `json:"size"`
	Sum  string      `json:"sha256"` // of the content, or of a link's target
}

// manifest is a workspace's entries, sorted by path.
type manifest []wsEntry

// hash names the whole state: paths, kinds, modes and contents.
func (m manifest) hash() string {
	h := sha256.New()
	for _, e := range m {
		kind := "f"
		if e.Link {
			kind = "l"
		}
		fmt.Fprintf(h, "%s %o %s %q\n", kind, e.Mode, e.Sum, e.Path)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func (m manifest) byPath() map[string]wsEntry {
	out := make(map[string]wsEntry, len(m))
	for _, e := range m {
		out[e.Path] = e
	}
	return out
}

// Change is one difference between two states of a workspace.
type Change struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // added, removed or modified
}

// diffManifests lists what changed from a to b, sorted by path.
func diffManifests(a, b manifest) []Change {
	am, bm := a.byPath(), b.byPath()
	var out []Change
	for _, e := range b {
		old, ok := am[e.Path]
		switch {
		case !ok:
			out = append(out, Change{e.Path, "added"})
		case old != e:
			out = append(out, Change{e.Path, "modified"})
		}
	}
	for _, e := range a {
		if _, ok := bm[e.Path]; !ok {
			out = append(out, Change{e.Path, "removed"})
		}
	}
	slices.SortFunc(out, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// workspace is the implementer's directory and what never belongs to it.
type workspace struct {
	root    string   // absolute
	exclude []string // absolute paths left out wherever they appear (the record, its state)
}

// listing modes
const (
	listGit = "git" // tracked and untracked-but-not-ignored files of a git work tree
	listDir = "dir" // every file under the root, .git directories left out
)

// list returns the relative paths that make up the workspace, and how they
// were found. In a git work tree that is what git would commit (ignored
// build output and the .git internals stay out); elsewhere every file.
func (w workspace) list(ctx context.Context) ([]string, string, error) {
	if paths, ok := w.listGit(ctx); ok {
		return paths, listGit, nil
	}
	paths, err := w.walk(w.root)
	return paths, listDir, err
}

func (w workspace) listGit(ctx context.Context) ([]string, bool) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := gitrepo.Run(ctx, w.root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, false // not a work tree, or git refuses it: walk instead
	}
	var paths []string
	for p := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if p == "" || w.excluded(filepath.Join(w.root, filepath.FromSlash(p))) {
			continue
		}
		paths = append(paths, p)
	}
	return paths, true
}

// walk lists every file and symlink under dir, relative to it.
func (w workspace) walk(dir string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if w.excluded(p) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	return paths, err
}

// excluded reports whether p is one of the excluded paths or inside one:
// git lists the files under .walkie/ one by one.
func (w workspace) excluded(p string) bool {
	return slices.ContainsFunc(w.exclude, func(e string) bool {
		return p == e || strings.HasPrefix(p, e+string(filepath.Separator))
	})
}

// scan reads the entries of paths under root (paths that vanished or are
// directories, such as a submodule, are left out). With copyTo set each
// file is copied there as it is hashed, so a freeze reads every byte once.
func scan(root string, paths []string, copyTo string) (manifest, error) {
	var m manifest
	for _, p := range paths {
		src := filepath.Join(root, filepath.FromSlash(p))
		fi, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // tracked but deleted
		}
		if err != nil {
			return nil, err
		}
		e := wsEntry{Path: p}
		var dst string
		if copyTo != "" {
			dst = filepath.Join(copyTo, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return nil, err
			}
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return nil, err
			}
			e.Link, e.Size = true, int64(len(target))
			s := sha256.Sum256([]byte(target))
			e.Sum = hex.EncodeToString(s[:])
			if dst != "" {
				if err := os.Symlink(target, dst); err != nil {
					return nil, err
				}
			}
		case fi.Mode().IsRegular():
			e.Mode, e.Size = fi.Mode().Perm(), fi.Size()
			e.Sum, err = hashFile(src, dst, e.Mode)
			var nr *walkie.NotRegularError
			if errors.As(err, &nr) {
				continue // replaced since the look, by what is never opened
			}
			if err != nil {
				return nil, err
			}
		default:
			continue // directories (a submodule), sockets, fifos, devices: never opened
		}
		m = append(m, e)
	}
	slices.SortFunc(m, func(a, b wsEntry) int { return strings.Compare(a.Path, b.Path) })
	return m, nil
}

// hashFile returns the sha256 of src, copying it to dst (with mode) when
// dst is set. src must still be a regular file: whoever can write the
// workspace may have swapped in a named pipe since it was looked at, and
// opening that would wait for ever (walkie.OpenRegular).
func hashFile(src, dst string, mode fs.FileMode) (string, error) {
	in, err := walkie.OpenRegular(src, os.O_RDONLY)
	if err != nil {
		return "", err
	}
	defer in.Close()
	h := sha256.New()
	var w io.Writer = h
	var out *os.File
	if dst != "" {
		if out, err = os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode); err != nil {
			return "", err
		}
		defer out.Close()
		w = io.MultiWriter(h, out)
	}
	if _, err := io.Copy(w, in); err != nil {
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	if out != nil {
		// The umask narrowed the mode at creation; the copy keeps the original's.
		if err := out.Chmod(mode); err != nil {
			return "", err
		}
		if err := out.Close(); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copySnapshot copies a frozen snapshot (exactly the manifest's entries)
// to dst, a directory that must not exist yet.
func copySnapshot(snapshot string, m manifest, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	paths := make([]string, len(m))
	for i, e := range m {
		paths[i] = e.Path
	}
	got, err := scan(snapshot, paths, dst)
	if err != nil {
		return fmt.Errorf("copy the frozen workspace: %w", err)
	}
	if got.hash() != m.hash() {
		return fmt.Errorf("the frozen workspace in %s no longer matches its manifest", snapshot)
	}
	return nil
}

// scanTree reads every file and symlink under dir (a reviewer's copy,
// where anything it added counts).
func scanTree(dir string) (manifest, error) {
	paths, err := workspace{root: dir}.walkAll(dir)
	if err != nil {
		return nil, err
	}
	return scan(dir, paths, "")
}

// walkAll is walk without leaving out .git: in a copy, a .git a reviewer
// created is a change like any other.
func (w workspace) walkAll(dir string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err == nil {
			paths = append(paths, filepath.ToSlash(rel))
		}
		return err
	})
	return paths, err
}

// restore puts the workspace back to a frozen snapshot for the paths in
// changes, first keeping the changed versions under aside.
func restore(root, snapshot string, frozen manifest, changes []Change, aside string) error {
	want := frozen.byPath()
	for _, ch := range changes {
		p := filepath.Join(root, filepath.FromSlash(ch.Path))
		if ch.Kind != "removed" {
			keep := filepath.Join(aside, filepath.FromSlash(ch.Path))
			if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
				return err
			}
			if _, err := scan(root, []string{ch.Path}, aside); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("keep %s aside: %w", ch.Path, err)
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if _, ok := want[ch.Path]; ok {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if _, err := scan(snapshot, []string{ch.Path}, root); err != nil {
				return fmt.Errorf("restore %s: %w", ch.Path, err)
			}
		}
	}
	return nil
}

// freeze records the workspace as the implementer left it: a manifest,
// its hash and a snapshot copy under the round's directory.
func (rt *Table) freeze(ctx context.Context, round, turn int, m *walkie.Meta) (*Freeze, manifest, error) {
	rd := rt.roundDir(round)
	var fr Freeze
	var mf manifest
	ok1, err := readJSON(filepath.Join(rd, "freeze.json"), &fr)
	if err != nil {
		return nil, nil, err
	}
	ok2, err := readJSON(filepath.Join(rd, "manifest.json"), &mf)
	if err != nil {
		return nil, nil, err
	}
	if ok1 && ok2 && mf.hash() == fr.Workspace {
		return &fr, mf, nil
	}
	snap := filepath.Join(rd, "snapshot")
	if err := os.RemoveAll(snap); err != nil { // a freeze cut short
		return nil, nil, err
	}
	ws := rt.workspaceOf(m)
	paths, listing, err := ws.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(snap, 0o755); err != nil {
		return nil, nil, err
	}
	if mf, err = scan(ws.root, paths, snap); err != nil {
		return nil, nil, err
	}
	fr = Freeze{Round: round, Turn: turn, Workspace: mf.hash(), Listing: listing, Files: len(mf), At: time.Now().UTC().Truncate(time.Millisecond)}
	for _, e := range mf {
		fr.Bytes += e.Size
	}
	if mf == nil {
		mf = manifest{}
	}
	if err := writeJSON(filepath.Join(rd, "manifest.json"), mf); err != nil {
		return nil, nil, err
	}
	if err := writeJSON(filepath.Join(rd, "freeze.json"), fr); err != nil {
		return nil, nil, err
	}
	rt.Log.Info("workspace frozen", zap.Int("round", round), zap.String("workspace_sha256", fr.Workspace), zap.Int("files", fr.Files), zap.String("listing", listing))
	return &fr, mf, nil
}

// checkIntrusion compares the real workspace with the frozen state after
// the reviewers ran. Reviewers work on copies, but nothing stops an agent
// from writing to a path it learnt from the record: such a change is kept
// aside, undone and recorded.
func (rt *Table) checkIntrusion(ctx context.Context, round int, fr *Freeze, mf manifest, m *walkie.Meta) error {
	ws := rt.workspaceOf(m)
	paths, _, err := ws.list(ctx)
	if err != nil {
		return err
	}
	now, err := scan(ws.root, paths, "")
	if err != nil {
		return err
	}
	if now.hash() == fr.Workspace {
		return nil
	}
	rd := rt.roundDir(round)
	changes := diffManifests(mf, now)
	aside := filepath.Join(rd, "intruded")
	if err := restore(ws.root, filepath.Join(rd, "snapshot"), mf, changes, aside); err != nil {
		return fmt.Errorf("undo changes made to the workspace during review: %w", err)
	}
	var prev []Change
	if _, err := readJSON(filepath.Join(rd, "intruded.json"), &prev); err != nil {
		return err
	}
	rt.Log.Warn("the workspace changed while the reviewers ran; the changes were kept aside and undone",
		zap.Int("round", round), zap.Int("changes", len(changes)), zap.String("aside", aside))
	return writeJSON(filepath.Join(rd, "intruded.json"), append(prev, changes...))
}

// WorkspaceHash is the manifest hash of the workspace at root, as a round
// freezes it (every file git would list, or every file under root): what
// round.json names as the state a round judged.
func WorkspaceHash(ctx context.Context, root string) (string, error) {
	ws := workspace{root: root}
	paths, _, err := ws.list(ctx)
	if err != nil {
		return "", err
	}
	m, err := scan(root, paths, "")
	if err != nil {
		return "", err
	}
	return m.hash(), nil
}

// CopyWorkspace copies the workspace at from (what a freeze would list:
// git's files in a work tree, else every file) to to, leaving out what
// lies at or under any of exclude, and every walkie record and state
// directory: a copy is made for another record.
func CopyWorkspace(ctx context.Context, from, to string, exclude []string) error {
	ws := workspace{root: from, exclude: exclude}
	paths, _, err := ws.list(ctx)
	if err != nil {
		return err
	}
	paths = slices.DeleteFunc(paths, func(p string) bool {
		if strings.HasSuffix(p, ".walkie.md") || p == ".walkie" || strings.HasPrefix(p, ".walkie/") || strings.Contains(p, "/.walkie/") {
			return true
		}
		full := filepath.Join(from, filepath.FromSlash(p))
		return slices.ContainsFunc(exclude, func(x string) bool {
			return full == x || strings.HasPrefix(full, x+string(filepath.Separator))
		})
	})
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	_, err = scan(from, paths, to)
	return err
}
