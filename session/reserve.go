package session

import (
	"os"
	"path/filepath"
	"syscall"
)

// A session's two transcripts are new files, and on an ext4 that has just
// been synced (the record's append, the state) a new inode costs about
// 0.4 ms of CPU: the largest single cost between one agent's exit and the
// next one's start. So once a session's agent is running, it makes the
// next session's empty transcript files ahead (".next.log" and
// ".next.txt" beside its own), and the next session renames them to its
// own names, which costs next to nothing.

// reserveOf is the empty file kept ready for the next transcript like path.
func reserveOf(path string) string {
	return filepath.Join(filepath.Dir(path), ".next"+filepath.Ext(path))
}

// takeReserve renames the reserve beside path to path and returns it
// open for writing, or nil if there is none that is walkie's own: an
// empty regular file of this user with one name, never a link. Sessions
// running side by side may race for one reserve; whoever's rename did not
// move the file it opened gets nil.
func takeReserve(path string) *os.File {
	res := reserveOf(path)
	f, err := os.OpenFile(res, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !emptyOwnFile(fi) || os.Rename(res, path) != nil {
		f.Close()
		return nil
	}
	if now, err := os.Lstat(path); err != nil || !os.SameFile(fi, now) {
		f.Close()
		return nil
	}
	return f
}

// emptyOwnFile reports whether fi is an empty regular file of this user
// with one name.
func emptyOwnFile(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && fi.Size() == 0 && uint64(st.Nlink) == 1 && int(st.Uid) == os.Geteuid()
}

// reserveTranscripts makes the reserves the next session's transcripts
// take, where there are none yet. Failing costs only speed.
func reserveTranscripts(paths ...string) {
	for _, p := range paths {
		if p == "" {
			continue
		}
		f, err := os.OpenFile(reserveOf(p), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err == nil {
			f.Close()
		}
	}
}
