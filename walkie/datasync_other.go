//go:build !linux

package walkie

import "golang.org/x/sys/unix"

// datasync makes what was written to fd durable. macOS's fsync leaves the
// data in the drive's cache; F_FULLFSYNC asks the drive to write it.
func datasync(fd int) error {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0); err == nil {
		return nil
	}
	return unix.Fsync(fd)
}
