package roundtable

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/tree"
	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/walkie"
)

// A workspace is frozen as a manifest (package tree: every file and
// symlink with its mode and content hash, sorted by path) and a snapshot
// copy. The hash of the manifest names the state reviewers and the grader
// judged.

type (
	manifest = tree.Manifest
	// Change is one difference between two states of a workspace.
	Change = tree.Change
)

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

// walk lists every file and symlink under dir, relative to it, leaving
// out what is excluded and .git directories.
func (w workspace) walk(dir string) ([]string, error) {
	return tree.Walk(dir, func(p string, d fs.DirEntry) bool {
		return w.excluded(p) || d.IsDir() && d.Name() == ".git"
	})
}

// excluded reports whether p is one of the excluded paths or inside one:
// git lists the files under .walkie/ one by one.
func (w workspace) excluded(p string) bool {
	return slices.ContainsFunc(w.exclude, func(e string) bool {
		return p == e || strings.HasPrefix(p, e+string(filepath.Separator))
	})
}

// restore puts the workspace back to a frozen snapshot for the paths in
// changes, first keeping the changed versions under aside.
func restore(root, snapshot string, frozen manifest, changes []Change, aside string) error {
	want := frozen.ByPath()
	for _, ch := range changes {
		p := filepath.Join(root, filepath.FromSlash(ch.Path))
		if ch.Kind != tree.Removed {
			keep := filepath.Join(aside, filepath.FromSlash(ch.Path))
			if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
				return err
			}
			if _, err := tree.Scan(root, []string{ch.Path}, aside); err != nil && !errors.Is(err, fs.ErrExist) {
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
			if _, err := tree.Scan(snapshot, []string{ch.Path}, root); err != nil {
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
	if ok1 && ok2 && mf.Hash() == fr.Workspace {
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
	if mf, err = tree.Scan(ws.root, paths, snap); err != nil {
		return nil, nil, err
	}
	fr = Freeze{Round: round, Turn: turn, Workspace: mf.Hash(), Listing: listing, Files: len(mf), At: time.Now().UTC().Truncate(time.Millisecond)}
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
	now, err := tree.Scan(ws.root, paths, "")
	if err != nil {
		return err
	}
	if now.Hash() == fr.Workspace {
		return nil
	}
	rd := rt.roundDir(round)
	changes := tree.Diff(mf, now)
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
	m, err := tree.Scan(root, paths, "")
	if err != nil {
		return "", err
	}
	return m.Hash(), nil
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
	_, err = tree.Scan(from, paths, to)
	return err
}
