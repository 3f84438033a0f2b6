//go:build linux

package walkie

import "golang.org/x/sys/unix"

// datasync makes what was written to fd durable, with the size it needs
// to be read back: fdatasync, which skips the times a full fsync writes.
func datasync(fd int) error { return unix.Fdatasync(fd) }
