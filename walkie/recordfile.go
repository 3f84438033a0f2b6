package walkie

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// walkie acts on the record itself, never through a symbolic link: a
// rejected turn is undone by renaming a fresh copy over the record, and
// over a link that would replace the link, leaving the debate it points
// to with the rejected text. So a link is resolved once, by Resolve, where
// a person names the record (the CLI does it for every FILE argument), and
// every other operation opens the record with O_NOFOLLOW and refuses one.

// Resolve returns the path to act on for the record named file: file
// itself, or, when it is a symbolic link, the regular file it leads to. A
// directory, or anything else that is not a regular file, is bad input
// with a fix; a name that does not exist (or a link to nothing) gives an
// error for which errors.Is(err, fs.ErrNotExist) holds.
func Resolve(file string) (string, error) {
	fi, err := os.Lstat(file)
	if err != nil {
		return "", err
	}
	path := file
	if fi.Mode()&fs.ModeSymlink != 0 {
		if path, err = filepath.EvalSymlinks(file); err != nil {
			return "", err
		}
		if fi, err = os.Stat(path); err != nil {
			return "", err
		}
	}
	if !fi.Mode().IsRegular() {
		return "", notRegular(file, fi.Mode())
	}
	return path, nil
}

// openRecord opens the record with flag, refusing a symbolic link, and,
// without blocking on it, a named pipe, a device or a directory.
func openRecord(file string, flag int) (*os.File, error) {
	f, err := OpenRegular(file, flag)
	var nr *NotRegularError
	switch {
	case errors.As(err, &nr) && nr.Mode&fs.ModeSymlink != 0:
		return nil, linkError(file)
	case errors.As(err, &nr):
		return nil, notRegular(file, nr.Mode)
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", file, err)
	}
	return f, nil
}

// readRecord reads the whole record.
func readRecord(file string) ([]byte, error) {
	f, err := openRecord(file, os.O_RDONLY)
	return readAll(file, f, err)
}

func linkError(file string) error {
	target, _ := os.Readlink(file)
	fix := "walkie acts on the record itself, never through a link (undoing a turn would replace the link): name the file it points to"
	if real, err := filepath.EvalSymlinks(file); err == nil {
		fix = fmt.Sprintf("walkie acts on the record itself, never through a link (undoing a turn would replace the link): run it on %s", real)
	}
	return &InputError{File: file, Msg: fmt.Sprintf("is a symbolic link (to %s)", target), Fix: fix}
}

func notRegular(file string, m fs.FileMode) error {
	if m.IsDir() {
		fix := fmt.Sprintf("name a walkie file, or create one with `walkie init %s --agents a,b`", filepath.Join(file, "NAME.walkie.md"))
		if m, _ := filepath.Glob(filepath.Join(file, "*.walkie.md")); len(m) > 0 {
			fix = fmt.Sprintf("name the walkie file, e.g. %s", m[0])
		}
		return &InputError{File: file, Msg: "is a directory, not a walkie file", Fix: fix}
	}
	return &InputError{File: file, Msg: fmt.Sprintf("is not a regular file (%s)", fileKind(m)), Fix: "a walkie file is a regular markdown file; name one"}
}

// fileKind names what a non-regular file is, for a person.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
