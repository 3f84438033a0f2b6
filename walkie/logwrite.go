package walkie

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Save appends the change op to the log: the fields of st that differ
// from the log's fold, and attempt's record (a JSON value; nil for
// none). Nothing is written when there is neither. The line is synced
// before Save returns: the change is durable then, and acknowledged by
// nobody before. The caller holds the record lock (LockRecord). It
// reports whether it wrote.
func (l *Log) Save(op string, st *State, attempt any) (bool, error) {
	if err := l.forWriting(); err != nil {
		return false, err
	}
	set, err := l.v.patch(st)
	if err != nil {
		return false, err
	}
	var rec json.RawMessage
	if attempt != nil {
		if rec, err = json.Marshal(attempt); err != nil {
			return false, fmt.Errorf("encode the attempt for the log: %w", err)
		}
	}
	if set == nil && rec == nil {
		return false, nil
	}
	return true, l.append(LogLine{Op: op, Set: set, Attempt: rec})
}

// SaveState writes the fields of s that changed into the log of the
// debate whose state directory is dir, as one line of op "state". The
// caller holds the record lock.
func SaveState(dir string, s *State) error {
	l := OpenLog(dir)
	defer l.Close()
	_, err := l.Save(OpState, s, nil)
	return err
}

// patch is the set that takes the fold to st: each top-level field whose
// JSON differs, and null for each one st no longer has. UpdatedAt is the
// time of the last line, never set.
func (v *logView) patch(st *State) (json.RawMessage, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode the state: %w", err)
	}
	var now map[string]json.RawMessage
	if err := json.Unmarshal(b, &now); err != nil {
		return nil, err
	}
	delete(now, "updated_at")
	set := map[string]json.RawMessage{}
	for k, val := range now {
		if !bytes.Equal(v.fold[k], val) {
			set[k] = val
		}
	}
	for k := range v.fold {
		if _, ok := now[k]; !ok {
			set[k] = json.RawMessage("null")
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	return json.Marshal(set)
}

// forWriting opens the log for appending and catches the view up: a
// directory of layout 1 is converted first (migrate.go), and a debate
// with no log gets one.
func (l *Log) forWriting() error {
	if l.fd >= 0 && !l.writable {
		l.Close() // the view stays, if the file is the same
	}
	if l.fd < 0 {
		if err := l.open(true); err != nil {
			return err
		}
	}
	if l.fd < 0 {
		if l.legacy {
			if err := migrate(l.dir); err != nil {
				return err
			}
			return l.forWriting()
		}
		if err := l.create(); err != nil {
			return err
		}
	}
	return l.refresh()
}

// create makes the log, empty; its first append syncs the directory.
func (l *Log) create() error {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	fd, err := unix.Open(l.path, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.EEXIST) {
		return l.open(true) // made meanwhile: the writer holds the lock, so by an earlier run of this one
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", l.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return err
	}
	l.fd, l.writable, l.legacy, l.created = fd, true, false, true
	l.ino, l.dev, l.v = uint64(st.Ino), uint64(st.Dev), logView{}
	return nil
}

// append writes line, numbered and timed, after the view's last whole
// line, and syncs it. A torn tail the view found is ended first (by a
// space and a newline when it does not end a line): the line then names
// it (Torn), so a reader skips exactly those bytes.
func (l *Log) append(line LogLine) error {
	v := &l.v
	line.N, line.At = v.n+1, time.Now().UTC()
	if v.n == 0 {
		line.Layout = LayoutVersion
	}
	var lead []byte
	if t := v.torn; t != nil {
		if !v.endsNL {
			// A space before the newline: a line ends in "}", so what
			// the torn bytes hold never reads as a whole line, even a
			// line that lacks only its newline (its write was cut short,
			// so it was never acknowledged).
			lead = []byte(" \n")
		}
		line.Torn = &TornBytes{Offset: t.Offset, Bytes: t.Bytes + int64(len(lead))}
	}
	b, err := encodeLine(line)
	if err != nil {
		return err
	}
	if err := writeFull(l.fd, append(lead, b...)); err != nil {
		v.size = -1 // what is on disk now is read again
		return fmt.Errorf("append to %s: %w", l.path, err)
	}
	if err := datasync(l.fd); err != nil {
		v.size = -1
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	if l.created {
		if err := syncDir(l.dir); err != nil {
			return fmt.Errorf("sync %s: %w", l.dir, err)
		}
		l.created = false
	}
	_ = v.fold1(line) // a set Save made
	sum, _ := unseal(b[:len(b)-1])
	v.lines += v.tornNL + bytes.Count(lead, []byte{'\n'}) + 1
	v.n, v.end, v.lastSum, v.lastLen, v.at = line.N, v.size+int64(len(lead)+len(b)), sum, len(b), line.At
	v.size, v.torn, v.tornLine, v.tornNL, v.endsNL = v.end, nil, 0, 0, true
	if v.layout == 0 {
		v.layout = line.Layout
	}
	if v.n-v.cpN >= checkpointEvery {
		writeCheckpoint(l.dir, v)
	}
	return nil
}

// writeFull writes all of b to fd.
func writeFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
