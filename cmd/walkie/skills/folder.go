package skills

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// folder is an open directory that the skill's files are opened
// relative to, so that no name on the way is looked up twice: a folder
// checked once cannot be swapped for a link before the write.
type folder struct{ fd int }

var none = folder{fd: -1}

func (f folder) close() {
	if f.fd >= 0 {
		unix.Close(f.fd)
	}
}

// openDirs opens p's folders one at a time under p.Root, refusing a
// symbolic link, or anything but a folder, at any of them; with create,
// a missing one (and the root) is made. It returns the skill's folder and
// its parent.
func openDirs(p Place, create bool) (dir, parent folder, err error) {
	if create {
		// The root is the user's to choose (a home may be a link): it is
		// made as a path, and only what is under it is checked.
		if err := os.MkdirAll(p.Root, 0o755); err != nil {
			return none, none, err
		}
	}
	fd, err := unix.Open(p.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return none, none, &os.PathError{Op: "open", Path: p.Root, Err: err}
	}
	up := -1
	for i, name := range p.Dirs {
		next, err := openDir(fd, name)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openDir(fd, name)
			}
		}
		if err != nil {
			err = refusal(p.at(i), fd, name, true, err)
			unix.Close(fd)
			folder{up}.close()
			return none, none, err
		}
		folder{up}.close()
		up, fd = fd, next
	}
	return folder{fd}, folder{up}, nil
}

// openDir opens the folder name in dirfd, and fails on a symbolic link
// there rather than follow it.
func openDir(dirfd int, name string) (int, error) {
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// refusal says why name in dirfd (path, to a person) could not be
// opened: it is a symbolic link, it is not what was wanted (a folder, or
// a file), it does not exist (os.ErrNotExist), or err itself.
func refusal(path string, dirfd int, name string, wantDir bool, err error) error {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		switch isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR; {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			buf := make([]byte, 4096)
			n, _ := unix.Readlinkat(dirfd, name, buf)
			return &LinkError{Path: path, Target: string(buf[:max(n, 0)])}
		case wantDir && !isDir:
			return fmt.Errorf("%s is not a folder", path)
		case !wantDir && st.Mode&unix.S_IFMT != unix.S_IFREG:
			return fmt.Errorf("%s is not a regular file", path)
		}
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// read reads the skill's file in f; os.ErrNotExist when there is none.
// A named pipe there does not block it.
func (f folder) read(p Place) ([]byte, error) {
	fd, err := unix.Openat(f.fd, file, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, refusal(p.Path(), f.fd, file, false, err)
	}
	fh := os.NewFile(uintptr(fd), p.Path())
	defer fh.Close()
	if fi, err := fh.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, refusal(p.Path(), f.fd, file, false, unix.EINVAL)
	}
	return io.ReadAll(fh)
}

// write puts text in place as the skill's file in f, whole: written to a
// file of its own beside it, synced, and renamed over it, the folder then
// synced, so a crash leaves the old skill or the new one.
func (f folder) write(p Place, text []byte) error {
	tmp := "." + file + "." + strconv.Itoa(os.Getpid()) + ".tmp"
	_ = unix.Unlinkat(f.fd, tmp, 0) // one a crash left; a link there is removed, not followed
	fd, err := unix.Openat(f.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", p.Path(), err)
	}
	fh := os.NewFile(uintptr(fd), tmp)
	_, err = fh.Write(text)
	if err == nil {
		err = fh.Chmod(0o644)
	}
	if err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(f.fd, tmp, f.fd, file)
	}
	if err != nil {
		_ = unix.Unlinkat(f.fd, tmp, 0)
		return fmt.Errorf("write %s: %w", p.Path(), err)
	}
	if err := unix.Fsync(f.fd); err != nil {
		return fmt.Errorf("sync the folder of %s: %w", p.Path(), err)
	}
	return nil
}

// remove removes the file name in f.
func (f folder) remove(name string) error { return unix.Unlinkat(f.fd, name, 0) }

// rmdir removes the folder name in f, if it is empty.
func (f folder) rmdir(name string) error { return unix.Unlinkat(f.fd, name, unix.AT_REMOVEDIR) }
