package walkie

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// LogRepaired is what RepairLog did to a debate's log.
type LogRepaired struct {
	// Line and Bytes say where the damage was: the line of the log it
	// started on and how many bytes it was (a torn tail), or the line
	// dropped.
	Line  int
	Bytes int64
	// Side is the file its bytes were moved to (for a dropped line, the
	// whole log as it was).
	Side string
	// Dropped is true when lines in the middle were given up.
	Dropped bool
}

// RepairLog makes the log of the debate of the record file whole again,
// under the record lock and never while a controller runs it. With drop
// none it cuts a torn tail (a line a crash cut short, zeros): nothing in it
// was acknowledged, so nothing is lost, and its bytes are kept in a side
// file; a log damaged before a whole line is refused as every reader
// refuses it. With drop (lines of the log, among them the one the
// refusal named) it gives up what those lines recorded: the log is
// rewritten whole (a new file, synced, renamed over it) with a "dropped"
// line in the place of each and the lines after numbered on, and the old
// log kept beside it. The zero value
// means there was nothing to do.
func RepairLog(file string, drop ...int) (LogRepaired, error) {
	meta, err := ReadMeta(file)
	if err != nil {
		return LogRepaired{}, err
	}
	dir := StateDir(file, meta.ID)
	lock, err := LockRecord(dir)
	if err != nil {
		return LogRepaired{}, err
	}
	defer lock.Unlock()
	if ControllerRunning(dir) {
		return LogRepaired{}, &RefusedError{Op: "repair", Reason: "a controller is running this debate; it may be appending to the log now"}
	}
	l := OpenLog(dir)
	defer l.Close()
	_, err = l.State()
	if len(drop) == 0 {
		if err != nil {
			return LogRepaired{}, err
		}
		return l.cutTorn()
	}
	ie, ok := err.(*InputError)
	switch {
	case err == nil:
		return LogRepaired{}, &InputError{File: l.path, Line: drop[0], Msg: "the log reads whole: there is no damaged line to drop",
			Fix: "run walkie repair without --drop-log-line"}
	case !ok || ie.Line == 0 || l.fd < 0:
		return LogRepaired{}, err
	case !slices.Contains(drop, ie.Line):
		return LogRepaired{}, &InputError{File: l.path, Line: drop[0], Msg: fmt.Sprintf("the damage the log is refused for is at line %d, not %v", ie.Line, drop),
			Fix: fmt.Sprintf("run walkie repair %s --drop-log-line %d", file, ie.Line)}
	}
	return l.dropLine(drop)
}

// cutTorn moves the log's torn tail aside and cuts it off.
func (l *Log) cutTorn() (LogRepaired, error) {
	line, t := l.v.tornLine, l.v.torn
	if t == nil {
		return LogRepaired{}, nil
	}
	b := make([]byte, t.Bytes)
	if err := preadFull(l.fd, b, t.Offset); err != nil {
		return LogRepaired{}, fmt.Errorf("read the torn tail of %s: %w", l.path, err)
	}
	side, err := saveAside(l.dir, "torn-log", ".txt", b)
	if err != nil {
		return LogRepaired{}, fmt.Errorf("save the torn tail of %s: %w", l.path, err)
	}
	if err := l.forWriting(); err != nil {
		return LogRepaired{}, err
	}
	if err := unix.Ftruncate(l.fd, t.Offset); err != nil {
		return LogRepaired{}, fmt.Errorf("cut the torn tail of %s: %w", l.path, err)
	}
	if err := datasync(l.fd); err != nil {
		return LogRepaired{}, fmt.Errorf("sync %s: %w", l.path, err)
	}
	return LogRepaired{Line: line, Bytes: t.Bytes, Side: side}, nil
}

// dropLine rewrites the log without its lines drop (lines of the file,
// counted as readers count them), a "dropped" line in the place of each.
func (l *Log) dropLine(drop []int) (LogRepaired, error) {
	var st unix.Stat_t
	if err := unix.Fstat(l.fd, &st); err != nil {
		return LogRepaired{}, err
	}
	old := make([]byte, st.Size)
	if err := preadFull(l.fd, old, 0); err != nil {
		return LogRepaired{}, fmt.Errorf("read %s: %w", l.path, err)
	}
	out, dropped, err := rewriteDropping(l.path, old, drop)
	if err != nil {
		return LogRepaired{}, err
	}
	side, err := saveAside(l.dir, "log-damaged", ".jsonl", old)
	if err != nil {
		return LogRepaired{}, fmt.Errorf("keep %s before the repair: %w", l.path, err)
	}
	_ = os.Remove(filepath.Join(l.dir, checkpointFile)) // its offsets are the old log's
	if err := WriteFileAtomic(l.path, out, 0o644); err != nil {
		return LogRepaired{}, fmt.Errorf("rewrite %s: %w", l.path, err)
	}
	return LogRepaired{Line: drop[0], Bytes: dropped, Side: side, Dropped: true}, nil
}

// rewriteDropping is the log old with its lines drop given up: the whole
// lines before the first as they are, a "dropped" line for each, and the
// whole lines after numbered on from there and sealed again. Torn bytes a later line
// names are left out (that line no longer names them); damage anywhere
// else is refused as readers refuse it, naming its line, to be dropped by
// a repair of its own.
func rewriteDropping(path string, old []byte, drop []int) ([]byte, int64, error) {
	var out bytes.Buffer
	n, line, damaged := 0, 0, 0
	var dropped int64
	emit := func(l LogLine) error {
		n++
		l.N, l.Torn, l.Layout = n, nil, 0
		if n == 1 {
			l.Layout = LayoutVersion
		}
		b, err := encodeLine(l)
		out.Write(b)
		return err
	}
	for rest := old; len(rest) > 0; {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			nl = len(rest) - 1 // a torn tail without its newline
		}
		raw := rest[:nl+1]
		rest = rest[nl+1:]
		line++
		if slices.Contains(drop, line) {
			dropped += int64(len(raw))
			if err := emit(LogLine{Op: OpDropped, At: time.Now().UTC()}); err != nil {
				return nil, 0, err
			}
			continue
		}
		got, _, ok := decodeLine(bytes.TrimSuffix(raw, []byte("\n")))
		if !ok {
			damaged = cmp.Or(damaged, line)
			continue
		}
		if damaged > 0 && got.Torn == nil {
			return nil, 0, &InputError{File: path, Line: damaged, Msg: fmt.Sprintf("line %d of the log is damaged too, and whole lines follow it", damaged),
				Fix: fmt.Sprintf("give it up as well: name it too (--drop-log-line %d)", damaged)}
		}
		damaged = 0
		if err := emit(got); err != nil {
			return nil, 0, err
		}
	}
	return out.Bytes(), dropped, nil
}
