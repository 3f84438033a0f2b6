package blob

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Dir keeps blobs in a directory: ROOT/ab/abcdef… by their sha256, and
// ROOT/id, the store's name, made once.
type Dir struct{ root string }

// OpenDir opens (and makes) the store at root.
func OpenDir(root string) (*Dir, error) {
	if root == "" || strings.Contains(root, "://") {
		return nil, fmt.Errorf("%q: a blob store kept here is a directory", root)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(abs, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("blob store %s: %w", abs, err)
	}
	d := &Dir{root: abs}
	if _, err := d.ID(context.Background()); errors.Is(err, fs.ErrNotExist) {
		if err := d.makeID(); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return d, nil
}

// makeID names the store, once: whoever makes it first wins, and every
// process reads that one.
func (d *Dir) makeID() error {
	var b [12]byte
	_, _ = rand.Read(b[:])
	f, err := os.OpenFile(filepath.Join(d.root, "id"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("blob store %s: %w", d.root, err)
	}
	_, err = f.WriteString(hex.EncodeToString(b[:]) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Where is the store's directory.
func (d *Dir) Where() string { return d.root }

// ID is the store's name.
func (d *Dir) ID(context.Context) (string, error) {
	b, err := os.ReadFile(filepath.Join(d.root, "id"))
	if err != nil {
		return "", err
	}
	id := string(b)
	if len(id) < 2 {
		return "", fmt.Errorf("blob store %s: its id file is empty", d.root)
	}
	return id[:len(id)-1], nil
}

func (d *Dir) path(sha string) string { return filepath.Join(d.root, sha[:2], sha) }

// Put stores what r reads, synced before it returns: a reference to it
// goes into a workflow's history next, and must outlive a crash.
func (d *Dir) Put(_ context.Context, r io.Reader) (Ref, error) {
	tmp, err := os.CreateTemp(filepath.Join(d.root, "tmp"), "put-")
	if err != nil {
		return Ref{}, err
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	defer tmp.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(r, Max+1))
	if err != nil {
		return Ref{}, err
	}
	if n > Max {
		return Ref{}, ErrTooLarge
	}
	ref := Ref{SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}
	dst := d.path(ref.SHA256)
	if _, err := os.Stat(dst); err == nil {
		now := time.Now()
		return ref, os.Chtimes(dst, now, now) // kept: Prune goes by the last use
	}
	if err := tmp.Sync(); err != nil {
		return Ref{}, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return Ref{}, err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return Ref{}, err
	}
	return ref, syncDir(filepath.Dir(dst))
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Open reads a blob.
func (d *Dir) Open(_ context.Context, ref Ref) (io.ReadCloser, error) {
	if !ref.Valid() {
		return nil, fmt.Errorf("blob %s: not a blob's name", ref)
	}
	p := d.path(ref.SHA256)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s in %s: %w", ref, d.root, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // in use: Prune keeps it
	return verify(f, ref), nil
}

// Prune removes the blobs not put or read for longer than keep, and what
// a put cut short left; it returns how many blobs it removed.
func (d *Dir) Prune(keep time.Duration) (int, error) {
	cut := time.Now().Add(-keep)
	n := 0
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || p == filepath.Join(d.root, "id") {
			return err
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(cut) {
			return nil // gone meanwhile, or in use
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if filepath.Base(filepath.Dir(p)) != "tmp" {
			n++
		}
		return nil
	})
	return n, err
}
