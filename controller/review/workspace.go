package review

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/walkie"
)

// The agents never run in the checkout itself. Each debate gets a copy of
// the head commit (git archive: exactly what was committed, nothing the
// job built or fetched), and the debate's record sits at the top of that
// copy, so the agents' CLIs, whose sandboxes let them write only in their
// working directory, can append a turn there and cannot change the
// checkout. What they change in the copy is listed and thrown away.

// leftOut reports whether a path of the commit stays out of the agents'
// copy: the project settings of the agent CLIs, which can add hooks, MCP
// servers or permissions that would run commands the pull request chose
// (.claude/settings.json, .mcp.json, .gemini/settings.json,
// .codex/config.toml), at any depth, and walkie's own state directory.
func leftOut(p string) bool {
	for _, part := range strings.Split(p, "/") {
		switch part {
		case ".claude", ".gemini", ".codex", ".walkie":
			return true
		}
	}
	return path.Base(p) == ".mcp.json"
}

// fileEntry is one file of the copy as it was made.
type fileEntry struct {
	kind string // "file", "symlink"
	mode fs.FileMode
	hash string // sha256 of the content, or of the link target
}

// workspace is the copy one debate runs in.
type workspace struct {
	dir   string
	files map[string]fileEntry // path (slash-separated) → entry
	left  []string             // paths of the commit left out
	// own are the names at the top that belong to the debate, not to the
	// commit: the record, its .walkie directory, the copy's .git.
	own map[string]bool
}

// makeWorkspace writes commit's tree into dir (which must not exist) and
// makes it a git repository of its own, so that tools run inside it (the
// CLIs looking for their project root, the round table listing the
// workspace) stop there rather than at a checkout that holds it.
func makeWorkspace(ctx context.Context, root, commit, dir, record string) (*workspace, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make the agents' copy: %w", err)
	}
	w := &workspace{dir: dir, files: map[string]fileEntry{}, own: map[string]bool{record: true, ".walkie": true, ".git": true}}
	if err := w.extract(ctx, root, commit); err != nil {
		return nil, fmt.Errorf("copy commit %s into %s: %w", short(commit), dir, err)
	}
	if _, err := git(ctx, dir, "init", "--quiet"); err != nil {
		return nil, fmt.Errorf("make the agents' copy a repository: %w", err)
	}
	// The debate's own files are no part of what is reviewed: a round
	// table lists its workspace as git does, and must not list these.
	exclude := "/.walkie/\n/" + record + "\n/report.md\n/report.json\n"
	if err := os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755); err != nil {
		return nil, fmt.Errorf("make the agents' copy a repository: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte(exclude), 0o644); err != nil {
		return nil, fmt.Errorf("make the agents' copy a repository: %w", err)
	}
	return w, nil
}

// extract streams `git archive` of commit into the workspace. Every path
// is opened through an os.Root, so no entry can write outside it, not even
// through a symlink an earlier entry made.
func (w *workspace) extract(ctx context.Context, root, commit string) error {
	r, err := os.OpenRoot(w.dir)
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := gitrepo.Command(ctx, root, nil, "archive", "--format=tar", commit)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git archive: %w", err)
	}
	xerr := w.untar(r, tar.NewReader(out))
	if xerr != nil {
		cancel() // git may be blocked writing the rest
	}
	werr := cmd.Wait()
	switch {
	case xerr != nil:
		return xerr
	case werr != nil:
		return fmt.Errorf("git archive %s: %s: %w", short(commit), strings.TrimSpace(stderr.String()), werr)
	}
	return nil
}

func (w *workspace) untar(r *os.Root, tr *tar.Reader) error {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read git archive: %w", err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if h.Typeflag == tar.TypeXGlobalHeader || name == "" {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("git archive holds %q, a path outside the copy", h.Name)
		}
		if w.skipped(name) {
			if parent := path.Dir(name); parent == "." || !w.skipped(parent) {
				w.left = append(w.left, name) // once, not for each file under it
			}
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := r.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := r.MkdirAll(path.Dir(name), 0o755); err != nil {
				return err
			}
			if err := r.Symlink(h.Linkname, name); err != nil {
				return err
			}
			w.files[name] = fileEntry{kind: "symlink", hash: sum([]byte(h.Linkname))}
		case tar.TypeReg:
			mode := fs.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			if err := r.MkdirAll(path.Dir(name), 0o755); err != nil {
				return err
			}
			hash, err := writeFile(r, name, mode, tr)
			if err != nil {
				return err
			}
			w.files[name] = fileEntry{kind: "file", mode: mode, hash: hash}
		}
	}
}

// skipped reports whether a path of the commit stays out of the copy.
func (w *workspace) skipped(name string) bool {
	top, _, _ := strings.Cut(name, "/")
	return w.own[top] || leftOut(name)
}

func writeFile(r *os.Root, name string, mode fs.FileMode, src io.Reader) (string, error) {
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// changes lists what differs in the copy from the commit it was made of:
// "added PATH", "removed PATH", "modified PATH", in path order. The
// debate's own files and the copy's .git are not part of it.
func (w *workspace) changes() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	err := filepath.WalkDir(w.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(w.dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if w.own[rel] {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			return nil
		}
		seen[rel] = true
		was, ok := w.files[rel]
		if !ok {
			out = append(out, "added "+rel)
			return nil
		}
		now, err := entryOf(p, e)
		if err != nil {
			return err
		}
		if now != was {
			out = append(out, "modified "+rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compare the agents' copy: %w", err)
	}
	for p := range w.files {
		if !seen[p] {
			out = append(out, "removed "+p)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		_, pa, _ := strings.Cut(a, " ")
		_, pb, _ := strings.Cut(b, " ")
		return strings.Compare(pa, pb)
	})
	return out, nil
}

// entryOf is what the copy holds at p now. Only a regular file is opened:
// an agent may have left a named pipe or a device where the commit had a
// file, and opening it would wait for ever (issue 27, item 7); such an
// entry is a change, named by its type.
func entryOf(p string, e fs.DirEntry) (fileEntry, error) {
	if e.Type()&fs.ModeSymlink != 0 {
		t, err := os.Readlink(p)
		if err != nil {
			return fileEntry{}, err
		}
		return fileEntry{kind: "symlink", hash: sum([]byte(t))}, nil
	}
	f, err := walkie.OpenRegular(p, os.O_RDONLY)
	var nr *walkie.NotRegularError
	if errors.As(err, &nr) {
		return fileEntry{kind: nr.Mode.String()}, nil
	}
	if err != nil {
		return fileEntry{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileEntry{}, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fileEntry{}, fmt.Errorf("read %s: %w", p, err)
	}
	mode := fs.FileMode(0o644)
	if fi.Mode()&0o111 != 0 {
		mode = 0o755
	}
	return fileEntry{kind: "file", mode: mode, hash: hex.EncodeToString(h.Sum(nil))}, nil
}

// readFile reads a file of the copy as the agents left it: a regular file
// within the copy, never what a link leads to outside it.
func (w *workspace) readFile(rel string) ([]byte, error) {
	r, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, err := walkie.OpenRegularIn(r, rel, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// clear removes the copy, keeping the debate's own files (the record and
// its .walkie directory) where they are: the record stays verifiable in
// place, and what is left is small enough to keep as an artifact.
func (w *workspace) clear() error {
	ents, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("remove the agents' copy: %w", err)
	}
	var errs []error
	for _, e := range ents {
		if w.own[e.Name()] && e.Name() != ".git" {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(w.dir, e.Name())))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove the agents' copy: %w", err)
	}
	return nil
}

// short is a commit hash as people quote it.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
