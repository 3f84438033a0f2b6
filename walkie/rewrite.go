package walkie

import (
	"os"
	"path/filepath"
)

// Files a debate's state directory rewrites every turn (the state, the
// doorbell, the snapshot, the activity, the session's note) are replaced
// by rewriting a spare file beside them in place and exchanging the two
// names, not by creating a new file each time: on an ext4 that has just
// been synced, a new inode costs about 0.4 ms of CPU, the in-place write
// and the exchange about 0.02 ms (docs/benchmarks.md, "Between turns").
// Where the exchange cannot be made safely (another system, a file
// system without leases or exchange, a spare someone holds open) the
// write falls back to a new temporary file renamed over the old one, so
// the guarantees below hold either way.
//
// Every reader sees the old file or the new one, whole: the spare is
// written only under a write lease (F_SETLEASE), which the kernel grants
// only while nobody else has the file open and which holds back anyone
// who opens it until the exchange is done. A reader that still has the
// old file open keeps it unchanged: the next rewrite finds it open, is
// refused the lease and falls back. A process killed at any moment
// leaves the old file or the new one in place, whole: the exchange is
// atomic and the spare is never the file in place while it is written.

// spareOf is the name of path's spare.
func spareOf(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".spare")
}

// RewriteFile replaces path with data as WriteFileAtomic does: the data
// and the exchange are both synced, so a crash leaves the old file or the
// new one, whole, and once it returns the new one. The directory sync is
// needed for the spare scheme itself: the next rewrite writes in place
// the file that this one put aside, which must not still be the one in
// place on the disk.
func RewriteFile(path string, data []byte, perm os.FileMode) error {
	done, err := rewriteInPlace(path, data, perm, true)
	if done || err != nil {
		return err
	}
	return WriteFileAtomic(path, data, perm)
}

// RewriteUnsynced replaces path with data as ReplaceUnsynced does: a
// process killed at any moment leaves the old file or the new one,
// whole; only a machine crash can leave an older version, an empty file,
// or (since the spare is written in place) one whose pages are of two
// versions. It is for files whose readers cope with that: the doorbell
// (Reconcile rings again one that is behind the record or unreadable),
// the activity (a display), and the controller's snapshot (used only if
// it verifies and matches the state).
func RewriteUnsynced(path string, data []byte, perm os.FileMode) error {
	done, err := rewriteInPlace(path, data, perm, false)
	if done || err != nil {
		return err
	}
	return ReplaceUnsynced(path, data, perm)
}
