package walkie

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Log is a debate's log as one process reads and writes it: the fold of
// its lines so far, caught up on every read with what was appended since
// (one fstat when nothing was, a read of the new lines when something
// was), so a controller that reads the state several times a turn pays
// for what changed, not for the history. A Log is for one goroutine; a
// writer must hold the record lock (LockRecord). Close it when done.
type Log struct {
	dir, path string
	fd        int // -1 while closed
	writable  bool
	created   bool // made by this Log: its first append syncs the directory
	ino, dev  uint64
	v         logView
	// legacy: there is no log, and the directory holds a layout-1
	// state.json or turns.jsonl, read as they are until a writer
	// converts them (migrate.go).
	legacy bool
}

// logView is what a read of the log found.
type logView struct {
	fold    map[string]json.RawMessage // the state's fields, compact JSON
	n       int                        // whole lines folded
	lines   int                        // lines of the file up to end, for messages
	end     int64                      // the offset after the last whole line
	lastSum uint32                     // the checksum of line n
	lastLen int                        // line n's length, its newline included
	at      time.Time                  // line n's time
	layout  int
	// torn is the bytes after end that are no whole line (a write cut
	// short, zeros), skipped; tornLine is the line where they start.
	torn     *TornBytes
	tornLine int
	tornNL   int   // the newlines in the torn bytes
	endsNL   bool  // the file's last byte is a newline (or it is empty)
	size     int64 // the file's size as read
	cpN      int   // the lines the checkpoint this view began from summed up (0: none)
}

// OpenLog opens the log of the debate whose state directory is dir. Nothing
// is read until it is asked for.
func OpenLog(dir string) *Log {
	return &Log{dir: dir, path: filepath.Join(dir, LogFile), fd: -1}
}

// Close releases the log's file.
func (l *Log) Close() {
	if l.fd >= 0 {
		_ = unix.Close(l.fd)
		l.fd = -1
	}
}

// State is the debate's control state: the fold of the log, caught up
// with every line appended so far. A debate with no log yet has the
// empty state (or, in a directory of layout 1, the state.json it holds).
// A line damaged before a whole one is an *InputError naming it.
func (l *Log) State() (*State, error) {
	if err := l.refresh(); err != nil {
		return nil, err
	}
	if l.legacy {
		return loadLegacyState(l.dir)
	}
	return l.v.state()
}

// state materialises the fold.
func (v *logView) state() (*State, error) {
	s := &State{}
	if len(v.fold) > 0 {
		b, err := json.Marshal(v.fold)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, s); err != nil {
			return nil, fmt.Errorf("fold the log: %w", err)
		}
	}
	s.UpdatedAt = v.at
	return s, nil
}

// LoadState reads a debate's control state from its log (from the
// checkpoint on, so its cost does not grow with the history); a missing
// log is an empty state.
func LoadState(dir string) (*State, error) {
	l := OpenLog(dir)
	defer l.Close()
	return l.State()
}

// refresh catches the view up with the file: from the checkpoint when it
// has read nothing yet, else from where it stopped. A file replaced or cut
// behind its back is read again from the start.
func (l *Log) refresh() error {
	if l.fd < 0 {
		if err := l.open(false); err != nil {
			return err
		}
		if l.fd < 0 {
			return nil // no log
		}
	} else if !l.same() {
		l.Close()
		l.v = logView{}
		return l.refresh()
	}
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", l.path, err)
	}
	switch {
	case st.Size == l.v.size && l.v.size > 0:
		return nil
	case st.Size < l.v.end:
		l.v = logView{} // cut behind this view: read it all again
	}
	if l.v.n == 0 && l.v.size == 0 {
		l.startFromCheckpoint(st.Size)
	}
	return l.readFrom(l.v.end, st.Size)
}

// readFrom reads the file from off (the view's end) to size and folds
// what it holds.
func (l *Log) readFrom(off, size int64) error {
	if size <= off {
		l.v.size, l.v.torn = size, nil
		return nil
	}
	buf := make([]byte, size-off)
	if err := preadFull(l.fd, buf, off); err != nil {
		return fmt.Errorf("read %s: %w", l.path, err)
	}
	return l.v.scan(l.path, buf, off, nil)
}

// preadFull reads len(b) bytes at off; a file that ends first fills less
// of b, which the caller's scan sees as what it is.
func preadFull(fd int, b []byte, off int64) error {
	for done := 0; done < len(b); {
		n, err := unix.Pread(fd, b[done:], off+int64(done))
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		if n == 0 {
			clear(b[done:])
			return nil
		}
		done += n
	}
	return nil
}

// scan folds the lines of data, which starts at file offset base (the
// view's end), calling visit for each whole line. A damaged line must be
// followed by nothing whole (a torn tail, skipped) or by the line whose
// append ended it, which names it; anything else is refused.
func (v *logView) scan(path string, data []byte, base int64, visit func(LogLine) error) error {
	pos, line := 0, v.lines
	damaged, damagedLine := int64(-1), 0
	for pos < len(data) {
		nl := bytes.IndexByte(data[pos:], '\n')
		if nl < 0 {
			break
		}
		off := base + int64(pos)
		line++
		l, sum, ok := decodeLine(data[pos : pos+nl])
		pos += nl + 1
		if !ok {
			if damaged < 0 {
				damaged, damagedLine = off, line
			}
			continue
		}
		if err := v.check(path, l, line, off, damaged, damagedLine); err != nil {
			return err
		}
		damaged = -1
		if err := v.fold1(l); err != nil {
			return &InputError{File: path, Line: line, Msg: "line " + fmt.Sprint(l.N) + "'s set is not a JSON object: " + err.Error(), Fix: fixLog(line)}
		}
		v.n, v.lines, v.end, v.lastSum, v.lastLen, v.at = l.N, line, base+int64(pos), sum, nl+1, l.At
		if visit != nil {
			if err := visit(l); err != nil {
				return err
			}
		}
	}
	v.size = base + int64(len(data))
	v.endsNL = len(data) == 0 || data[len(data)-1] == '\n'
	v.torn, v.tornLine, v.tornNL = nil, 0, 0
	if v.size > v.end {
		v.torn, v.tornLine = &TornBytes{Offset: v.end, Bytes: v.size - v.end}, v.lines+1
		v.tornNL = bytes.Count(data[v.end-base:], []byte{'\n'})
	}
	return nil
}

// fixLog is what to do about a log damaged at line n, before a whole line.
func fixLog(n int) string {
	return fmt.Sprintf("a line recorded before it is damaged, so walkie cannot tell what the debate's state is and changes nothing; "+
		"restore log.jsonl from a backup, or run walkie repair FILE --drop-log-line %d to give up what that line recorded (the log as it was is kept beside it)", n)
}

// check refuses a whole line that does not follow the view: damage before
// it that it does not name, a gap or a repeat in the count, a layout this
// walkie does not know.
func (v *logView) check(path string, l LogLine, line int, off, damaged int64, damagedLine int) error {
	bad := func(at int, format string, args ...any) error {
		return &InputError{File: path, Line: at, Msg: fmt.Sprintf(format, args...), Fix: fixLog(at)}
	}
	switch t := l.Torn; {
	case damaged >= 0 && (t == nil || t.Offset != damaged || t.Offset+t.Bytes != off):
		return bad(damagedLine, "line %d of the log is damaged (its checksum does not match, or it is not whole), and whole lines follow it", damagedLine)
	case damaged < 0 && t != nil:
		return bad(line, "line %d names %d damaged bytes before it that are not there", line, t.Bytes)
	case l.N != v.n+1:
		return bad(line, "line %d of the log is change %d where %d was expected: a line was removed, repeated or moved", line, l.N, v.n+1)
	case v.n == 0 && l.Layout == 0:
		return bad(line, "the log's first line does not say its layout")
	case l.Layout > LayoutVersion:
		return &InputError{File: path, Line: line, Msg: fmt.Sprintf("the debate's directory is of layout %d, newer than this walkie reads (%d)", l.Layout, LayoutVersion),
			Fix: "run a newer walkie on this debate"}
	}
	if l.Layout > 0 {
		v.layout = l.Layout
	}
	return nil
}

// fold1 applies a line's set to the fold.
func (v *logView) fold1(l LogLine) error {
	if len(l.Set) == 0 {
		return nil
	}
	var set map[string]json.RawMessage
	if err := json.Unmarshal(l.Set, &set); err != nil {
		return err
	}
	if v.fold == nil {
		v.fold = map[string]json.RawMessage{}
	}
	for k, val := range set {
		if string(val) == "null" {
			delete(v.fold, k)
			continue
		}
		v.fold[k] = val
	}
	return nil
}

// Attempts returns the record of every attempt the log holds, in the order
// they ended, reading the whole log (the checkpoint holds no history). In
// a directory of layout 1 they are the lines of turns.jsonl. A line
// damaged before a whole one is an *InputError naming it.
func (l *Log) Attempts() ([]json.RawMessage, error) {
	if err := l.refresh(); err != nil {
		return nil, err
	}
	if l.legacy {
		return readLegacyTurns(l.dir)
	}
	if l.fd < 0 {
		return nil, nil
	}
	var out []json.RawMessage
	var all logView
	buf := make([]byte, l.v.size)
	if err := preadFull(l.fd, buf, 0); err != nil {
		return nil, fmt.Errorf("read %s: %w", l.path, err)
	}
	err := all.scan(l.path, buf, 0, func(line LogLine) error {
		if len(line.Attempt) > 0 {
			out = append(out, line.Attempt)
		}
		return nil
	})
	return out, err
}

// LogAttempts is Attempts of the log in dir.
func LogAttempts(dir string) ([]json.RawMessage, error) {
	l := OpenLog(dir)
	defer l.Close()
	return l.Attempts()
}

// Torn says where the log's torn tail is, if it has one: the line and
// the bytes a crash left after its last whole line.
func (l *Log) Torn() (line int, t *TornBytes, err error) {
	if err := l.refresh(); err != nil {
		return 0, nil, err
	}
	return l.v.tornLine, l.v.torn, nil
}

// open opens the log as walkie's own plain file: for reading, or for
// appending. A link, a named pipe, a device or a file with another name
// in its place is refused, and nothing blocks. A missing log leaves the
// Log closed, and notes whether the directory is of layout 1.
func (l *Log) open(write bool) error {
	flags := unix.O_RDONLY
	if write {
		flags = unix.O_RDWR | unix.O_APPEND
	}
	fd, err := unix.Open(l.path, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		l.legacy = hasLegacy(l.dir)
		return nil
	case errors.Is(err, unix.ELOOP):
		return &InputError{File: l.path, Msg: "is a symbolic link, and walkie reads nothing through one there", Fix: "walkie reads only the plain files it writes there; remove it"}
	case err != nil:
		return fmt.Errorf("open %s: %w", l.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("stat %s: %w", l.path, err)
	}
	if err := plainStat(l.path, &st); err != nil {
		unix.Close(fd)
		return err
	}
	if uint64(st.Ino) != l.ino || uint64(st.Dev) != l.dev {
		l.v = logView{} // another file than the view was read from
	}
	l.fd, l.writable, l.legacy = fd, write, false
	l.ino, l.dev = uint64(st.Ino), uint64(st.Dev)
	return nil
}

// same reports whether the log's name still leads to the file open.
func (l *Log) same() bool {
	var st unix.Stat_t
	return unix.Lstat(l.path, &st) == nil && uint64(st.Ino) == l.ino && uint64(st.Dev) == l.dev
}

// plainStat refuses what is not a regular file with one name.
func plainStat(path string, st *unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		kind := map[uint32]string{unix.S_IFIFO: "a named pipe", unix.S_IFDIR: "a directory", unix.S_IFSOCK: "a socket",
			unix.S_IFCHR: "a device", unix.S_IFBLK: "a device"}[uint32(st.Mode&unix.S_IFMT)]
		return &InputError{File: path, Msg: "is " + cmp.Or(kind, "something") + ", not a regular file", Fix: "walkie reads only the plain files it writes there; remove it"}
	case st.Nlink > 1:
		return &InputError{File: path, Msg: fmt.Sprintf("has %d names (a hard link), so it may be another file's", st.Nlink),
			Fix: "walkie never makes one: remove the other name if you made it, else this file"}
	}
	return nil
}
