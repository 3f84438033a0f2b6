package temporal

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/walkie-sh/walkie/controller/temporal/blob"
)

// A directory travels as a tar archive of its files and symlinks (their
// permission bits kept), in a Blob: a round table's sandbox to the worker
// that runs the session, an implementer's workspace there, and what it
// changed back.

// packed is one file of an archive: its name there, and where it is.
type packed struct{ name, src string }

// pack writes the files to w; what is gone, or not a file or a symlink,
// is left out, as a freeze leaves it out.
func pack(w io.Writer, files []packed) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := packOne(tw, f); err != nil {
			return fmt.Errorf("pack %s: %w", f.src, err)
		}
	}
	return tw.Close()
}

func packOne(tw *tar.Writer, f packed) error {
	fi, err := os.Lstat(f.src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(f.src)
		if err != nil {
			return err
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: f.name, Linkname: target, Mode: 0o777})
	case fi.IsDir():
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: f.name + "/", Mode: int64(fi.Mode().Perm())})
	case !fi.Mode().IsRegular():
		return nil
	}
	in, err := os.Open(f.src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Size: fi.Size(), Mode: int64(fi.Mode().Perm())}); err != nil {
		return err
	}
	// The file may have grown since the look; the header's size holds.
	_, err = io.CopyN(tw, in, fi.Size())
	return err
}

// packDir is every file, symlink and directory under dir, named relative
// to it: a sandbox's empty directory is where the agent is to write.
func packDir(dir string) ([]packed, error) {
	var out []packed
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, packed{name: filepath.ToSlash(rel), src: p})
		return err
	})
	return out, err
}

// unpack writes the archive r into dst, whose entries must be plain
// relative paths: each under the name place gives it, or not at all when
// it says false (nil: every entry, by its own name). Nothing is written
// through a symlink or outside dst (an os.Root): what comes from the
// other machine may be an agent's work.
func unpack(r io.Reader, dst string, place func(name string) (string, bool)) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unpack: %w", err)
		}
		name, ok := strings.TrimSuffix(h.Name, "/"), true
		if place != nil {
			name, ok = place(h.Name)
		}
		if !ok {
			continue
		}
		if total += h.Size; total > blob.Max {
			return fmt.Errorf("unpack: more than %d bytes", blob.Max)
		}
		if err := unpackOne(root, tr, h, name); err != nil {
			return fmt.Errorf("unpack %s: %w", h.Name, err)
		}
	}
}

// under places the entries under prefix/ by their names below it.
func under(prefix string) func(string) (string, bool) {
	return func(name string) (string, bool) { return strings.CutPrefix(name, prefix+"/") }
}

func unpackOne(root *os.Root, r io.Reader, h *tar.Header, name string) error {
	if !fs.ValidPath(name) {
		return fmt.Errorf("%q is not a plain relative path", name)
	}
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if h.Typeflag == tar.TypeDir {
		return root.MkdirAll(name, 0o755)
	}
	// What stands there goes first: a file the agent turned into a link,
	// or a link into a file, is replaced, never written through.
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if err := root.RemoveAll(name); err != nil {
			return err
		}
	}
	switch h.Typeflag {
	case tar.TypeSymlink:
		return root.Symlink(h.Linkname, name)
	case tar.TypeReg:
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(h.Mode).Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return err
		}
		if err := f.Chmod(fs.FileMode(h.Mode).Perm()); err != nil { // past the umask
			f.Close()
			return err
		}
		return f.Close()
	}
	return fmt.Errorf("entry type %q is neither a file nor a symlink", h.Typeflag)
}
