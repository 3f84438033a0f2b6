// Package tree is the state of a directory as a manifest: every file and
// symlink with its mode and content hash, sorted by path. A round table
// freezes its workspace as one (controller/roundtable), an engine lists
// what a session changed in its copy by comparing two (engine.FileAttempt's
// Watch), and a remote engine ships a workspace and brings back what
// changed in it with them (controller/temporal). Files are copied as they
// are hashed, so a freeze reads every byte once.
package tree

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/walkie-sh/walkie/walkie"
)

// Entry is one file or symlink of a directory.
type Entry struct {
	Path string      `json:"path"` // slash-separated, relative to the root
	Link bool        `json:"link,omitempty"`
	Mode fs.FileMode `json:"mode,omitempty"` // permission bits of a file
	Size int64       `json:"size"`
	Sum  string      `json:"sha256"` // of the content, or of a link's target
}

// Manifest is a directory's entries, sorted by path.
type Manifest []Entry

// Hash names the whole state: paths, kinds, modes and contents.
func (m Manifest) Hash() string {
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

// ByPath is the manifest as a map from path to entry.
func (m Manifest) ByPath() map[string]Entry {
	out := make(map[string]Entry, len(m))
	for _, e := range m {
		out[e.Path] = e
	}
	return out
}

// Change is one difference between two states of a directory.
type Change struct {
	Path string `json:"path"`
	Kind string `json:"kind"` // Added, Removed or Modified
}

// The kinds of a Change.
const (
	Added    = "added"
	Removed  = "removed"
	Modified = "modified"
)

// Diff lists what changed from a to b, sorted by path.
func Diff(a, b Manifest) []Change {
	am, bm := a.ByPath(), b.ByPath()
	var out []Change
	for _, e := range b {
		old, ok := am[e.Path]
		switch {
		case !ok:
			out = append(out, Change{e.Path, Added})
		case old != e:
			out = append(out, Change{e.Path, Modified})
		}
	}
	for _, e := range a {
		if _, ok := bm[e.Path]; !ok {
			out = append(out, Change{e.Path, Removed})
		}
	}
	slices.SortFunc(out, func(x, y Change) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// Scan reads the entries of paths under root (paths that vanished or are
// directories, such as a submodule, are left out). With copyTo set each
// file is copied there as it is hashed.
func Scan(root string, paths []string, copyTo string) (Manifest, error) {
	var m Manifest
	for _, p := range paths {
		e, ok, err := scanOne(root, p, copyTo)
		if err != nil {
			return nil, err
		}
		if ok {
			m = append(m, e)
		}
	}
	slices.SortFunc(m, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return m, nil
}

// scanOne reads one path's entry, copying it to copyTo when set; ok is
// false for what is left out.
func scanOne(root, p, copyTo string) (e Entry, ok bool, err error) {
	src := filepath.Join(root, filepath.FromSlash(p))
	fi, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return e, false, nil // tracked but deleted
	}
	if err != nil {
		return e, false, err
	}
	e = Entry{Path: p}
	var dst string
	if copyTo != "" {
		dst = filepath.Join(copyTo, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return e, false, err
		}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return e, false, err
		}
		e.Link, e.Size = true, int64(len(target))
		s := sha256.Sum256([]byte(target))
		e.Sum = hex.EncodeToString(s[:])
		if dst != "" {
			if err := os.Symlink(target, dst); err != nil {
				return e, false, err
			}
		}
	case fi.Mode().IsRegular():
		e.Mode, e.Size = fi.Mode().Perm(), fi.Size()
		e.Sum, err = hashFile(src, dst, e.Mode)
		var nr *walkie.NotRegularError
		if errors.As(err, &nr) {
			return e, false, nil // replaced since the look, by what is never opened
		}
		if err != nil {
			return e, false, err
		}
	default:
		return e, false, nil // directories (a submodule), sockets, fifos, devices: never opened
	}
	return e, true, nil
}

// hashFile returns the sha256 of src, copying it to dst (with mode) when
// dst is set. src must still be a regular file: whoever can write the
// directory may have swapped in a named pipe since it was looked at, and
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

// Copy copies a snapshot directory (exactly m's entries) to dst, and
// checks that the copy is m.
func Copy(snapshot string, m Manifest, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	paths := make([]string, len(m))
	for i, e := range m {
		paths[i] = e.Path
	}
	got, err := Scan(snapshot, paths, dst)
	if err != nil {
		return fmt.Errorf("copy the frozen workspace: %w", err)
	}
	if got.Hash() != m.Hash() {
		return fmt.Errorf("the frozen workspace in %s no longer matches its manifest", snapshot)
	}
	return nil
}

// ScanAll reads every file and symlink under dir, .git included: in a
// copy, whatever a session added counts.
func ScanAll(dir string) (Manifest, error) {
	paths, err := Walk(dir, nil)
	if err != nil {
		return nil, err
	}
	return Scan(dir, paths, "")
}

// Walk lists every file and symlink under dir, relative to it and
// slash-separated, skipping the directories skip says to (nil: none).
func Walk(dir string, skip func(path string, d fs.DirEntry) bool) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if skip != nil && p != dir && skip(p, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err == nil {
			paths = append(paths, filepath.ToSlash(rel))
		}
		return err
	})
	return paths, err
}
