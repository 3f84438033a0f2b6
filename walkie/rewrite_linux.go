//go:build linux

package walkie

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// rewriteInPlace writes data into path's spare under a write lease and
// exchanges the two names (see rewrite.go). It reports false, and leaves
// path as it was, wherever that cannot be done safely; the caller then
// falls back to a new file. Once the exchange is made it reports true,
// with an error only if the directory could not be synced.
func rewriteInPlace(path string, data []byte, perm os.FileMode, sync bool) (bool, error) {
	if !exchangeSpare(path, data, perm, sync) {
		return false, nil
	}
	// After the lease is let go: anyone opening the file meanwhile waits
	// on the lease, and need not wait for the disk too.
	if sync {
		return true, syncDir(filepath.Dir(path))
	}
	return true, nil
}

// exchangeSpare fills path's spare with data and puts it in place,
// reporting whether it did.
func exchangeSpare(path string, data []byte, perm os.FileMode, sync bool) bool {
	spare := spareOf(path)
	fd, err := openSpare(spare, perm)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	// Refused while anyone has the spare open: a reader that opened it
	// when it was the file in place and is still reading.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		return false
	}
	defer func() { _, _ = unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK) }()
	// Checked under the lease: the name still leads to this inode, which
	// is walkie's own plain file (never a link to, or another name of,
	// a file an agent chose). No other rewrite can exchange the spare
	// while the lease is held, since it would need the lease itself.
	if !ownSpare(fd, spare) {
		_ = unix.Unlink(spare) // the next rewrite makes a new one
		return false
	}
	if fillSpare(fd, data, perm, sync) != nil {
		return false
	}
	switch err := unix.Renameat2(unix.AT_FDCWD, spare, unix.AT_FDCWD, path, unix.RENAME_EXCHANGE); {
	case err == nil:
		return true
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		// No file in place yet, or no exchange on this file system: the
		// spare is whole, so a plain rename puts it in place as atomically.
		return unix.Rename(spare, path) == nil
	}
	return false
}

// openSpare opens the spare for writing, creating it when there is none,
// and never through a symbolic link.
func openSpare(spare string, perm os.FileMode) (int, error) {
	fd, err := unix.Open(spare, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		fd, err = unix.Open(spare, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	}
	if errors.Is(err, unix.ELOOP) {
		_ = unix.Unlink(spare) // a link put there: the next rewrite makes a spare
	}
	return fd, err
}

// ownSpare reports whether fd is a regular file of this user with one
// name, the one spare leads to.
func ownSpare(fd int, spare string) bool {
	var f, p unix.Stat_t
	if unix.Fstat(fd, &f) != nil || unix.Lstat(spare, &p) != nil {
		return false
	}
	return f.Dev == p.Dev && f.Ino == p.Ino && f.Mode&unix.S_IFMT == unix.S_IFREG &&
		f.Nlink == 1 && int(f.Uid) == os.Geteuid()
}

// fillSpare makes the spare's content data, with mode perm, synced to
// the disk when asked.
func fillSpare(fd int, data []byte, perm os.FileMode, sync bool) error {
	if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return err
	}
	for off := 0; off < len(data); {
		n, err := unix.Pwrite(fd, data[off:], int64(off))
		if err != nil {
			return err
		}
		off += n
	}
	if err := unix.Ftruncate(fd, int64(len(data))); err != nil {
		return err
	}
	if sync {
		return unix.Fdatasync(fd)
	}
	return nil
}

// retire removes path by making it its spare, for a file that is
// rewritten in place and comes back soon.
func retire(path string) error {
	return os.Rename(path, spareOf(path))
}
