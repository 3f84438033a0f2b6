package walkie

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A file an agent could have replaced (its turn's record, a verdict, a
// phase's file, a copy of the workspace it worked in) may no longer be a
// file: an agent can leave a named pipe, whose open waits until someone
// writes to it, or a link to a device that never ends. Such a file is
// opened only as a regular file, and nothing else is ever opened, so a
// reader cannot be made to wait (issue 27, item 7).

// NotRegularError is the refusal to open what is not a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // its type bits, as lstat or fstat saw them
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file; walkie opens nothing else", e.Path, fileKind(e.Mode))
}

// OpenRegular opens path with flag (O_RDONLY, O_RDWR, O_APPEND…; not
// O_CREATE) if it is a regular file, and never waits on one that is not:
// it looks first (lstat), so a link, a named pipe or a device is refused
// unopened; it opens with O_NOFOLLOW and O_NONBLOCK, so what replaced the
// file since is refused or opened without waiting; and it checks what it
// opened (fstat). A refusal is a *NotRegularError; a missing file gives an
// error for which errors.Is(err, fs.ErrNotExist) holds. A file under
// someone's write lease (F_SETLEASE) is not waited for either: the open
// fails with EWOULDBLOCK.
func OpenRegular(path string, flag int) (*os.File, error) {
	return openRegular(path, func() (fs.FileInfo, error) { return os.Lstat(path) }, func(extra int) (*os.File, error) {
		f, err := os.OpenFile(path, flag|extra|syscall.O_NOFOLLOW, 0)
		if errors.Is(err, syscall.ELOOP) {
			return nil, &NotRegularError{Path: path, Mode: fs.ModeSymlink}
		}
		return f, err
	})
}

// OpenRegularIn is OpenRegular for name inside root: links are followed
// as far as they stay within it (os.Root), the last one too, and what they
// lead to must be a regular file.
func OpenRegularIn(root *os.Root, name string, flag int) (*os.File, error) {
	path := filepath.Join(root.Name(), name)
	return openRegular(path, func() (fs.FileInfo, error) { return root.Stat(name) }, func(extra int) (*os.File, error) {
		return root.OpenFile(name, flag|extra, 0)
	})
}

// openRegular looks at the file (look), opens it without waiting (open,
// given the flags that ensure it) and checks what it opened.
func openRegular(path string, look func() (fs.FileInfo, error), open func(extra int) (*os.File, error)) (*os.File, error) {
	fi, err := look()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	}
	// O_NONBLOCK changes nothing for a regular file; O_NOCTTY keeps a
	// terminal swapped in from becoming the controlling one.
	f, err := open(syscall.O_NONBLOCK | syscall.O_NOCTTY)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: path, Mode: fi.Mode().Type()}
	}
	return f, nil
}

// ReadRegular reads the whole of path if it is a regular file (see
// OpenRegular).
func ReadRegular(path string) ([]byte, error) {
	f, err := OpenRegular(path, os.O_RDONLY)
	return readAll(path, f, err)
}

// readAll reads the whole of f, opened from path with err, and closes it.
func readAll(path string, f *os.File, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}
