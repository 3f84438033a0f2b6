package walkie

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Agents write in the directory of their debate, so anything under
// .walkie/ID may have been swapped by one: a transcript made a link to
// the user's private key, turns/ a link to another directory, a second
// name (hard link) of a file outside, a named pipe that blocks whoever
// opens it. The side files walkie reads there (and serves, on the fleet
// page) are therefore opened as plain files only.

// MaxSideFile bounds what ReadSideFile callers read of a JSON side file
// (activity.json, a layout-1 state.json or turns.jsonl): far above what walkie writes,
// low enough that a file an agent filled cannot exhaust the reader.
const MaxSideFile = 64 << 20

// OpenSideFile opens name, a slash-separated path below dir, for reading,
// as walkie's own plain file: it refuses a symbolic link at name or at
// any directory on the way, anything but a regular file (a named pipe or
// a device is never opened blocking), and a file with more than one name
// (a hard link: walkie never makes one, so the other name may be a file
// the agent could not read itself). dir itself is followed: it is the
// caller's to trust. A refusal is an *InputError; a missing file is an
// error for which errors.Is(err, fs.ErrNotExist) holds.
func OpenSideFile(dir, name string) (*os.File, error) {
	path := filepath.Join(dir, filepath.FromSlash(name))
	parts := strings.Split(name, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return nil, &InputError{File: path, Msg: fmt.Sprintf("%q is not a path below %s", name, dir)}
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer func() { root.Close() }()
	at := dir
	for _, p := range parts[:len(parts)-1] {
		at = filepath.Join(at, p)
		sub, err := openSubdir(root, p, at)
		if err != nil {
			return nil, err
		}
		root.Close()
		root = sub
	}
	return openPlain(root, parts[len(parts)-1], path)
}

// openSubdir opens the directory p of root, refusing a link. os.Root
// keeps every open inside root but follows links that stay inside it, so
// the directory opened must be the one lstat saw.
func openSubdir(root *os.Root, p, path string) (*os.Root, error) {
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, notPlain(path, fi)
	}
	sub, err := root.OpenRoot(p)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	got, err := sub.Stat(".")
	if err != nil || !os.SameFile(fi, got) {
		sub.Close()
		return nil, swapped(path)
	}
	return sub, nil
}

// openPlain opens the file p of root, refusing anything but a regular
// file with one name. What it opened must be what lstat saw: os.Root
// would follow a link put there meanwhile, if it stays inside root. A
// rewrite also puts another file in place (rewrite.go), so a change is
// looked at again a few times before it is refused.
func openPlain(root *os.Root, p, path string) (*os.File, error) {
	for try := 0; ; try++ {
		fi, err := root.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		if err := checkPlain(path, fi); err != nil {
			return nil, err
		}
		f, err := openNonblocking(root, p)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		got, err := f.Stat()
		switch {
		case err != nil:
		case os.SameFile(fi, got):
			if err = checkPlain(path, got); err == nil {
				return f, nil
			}
		case try < 8:
			f.Close()
			continue
		default:
			err = swapped(path)
		}
		f.Close()
		return nil, err
	}
}

// openNonblocking opens p with O_NONBLOCK, so a named pipe swapped in
// after the lstat does not block the open. On a regular file that flag
// makes the open fail with EWOULDBLOCK, instead of waiting, while a
// rewrite holds its lease (rewrite_linux.go): a rewrite holds it for one
// write, so the open is tried again.
func openNonblocking(root *os.Root, p string) (*os.File, error) {
	wait := time.Millisecond
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return f, err
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// checkPlain refuses what is not a regular file with one name.
func checkPlain(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return notPlain(path, fi)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return &InputError{File: path, Msg: fmt.Sprintf("has %d names (a hard link), so it may be another file's", st.Nlink),
			Fix: "walkie never makes one: remove the other name if you made it, else this file"}
	}
	return nil
}

func notPlain(path string, fi fs.FileInfo) error {
	msg := "is not a regular file"
	switch kind := fileKind(fi.Mode()); {
	case fi.Mode()&fs.ModeSymlink != 0:
		msg = "is a symbolic link, and walkie reads nothing through one there"
	case kind != "not a regular file":
		msg = "is " + kind + ", not a regular file"
	}
	return &InputError{File: path, Msg: msg, Fix: "walkie reads only the plain files it writes there; remove it"}
}

func swapped(path string) error {
	return &InputError{File: path, Msg: "kept being replaced while walkie opened it", Fix: "walkie reads only the plain files it writes there; stop what replaces it"}
}

// ReadSideFile reads the file OpenSideFile opens, refusing one longer
// than max bytes.
func ReadSideFile(dir, name string, max int64) ([]byte, error) {
	f, err := OpenSideFile(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if int64(len(b)) > max {
		return nil, &InputError{File: filepath.Join(dir, filepath.FromSlash(name)), Msg: fmt.Sprintf("is over %d bytes, far more than walkie writes", max),
			Fix: "remove it: walkie writes what it needs again"}
	}
	return b, nil
}
