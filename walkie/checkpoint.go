package walkie

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// The checkpoint (.walkie/ID/checkpoint.json) is the fold of the log's
// first N lines and where they end, so that a reader (walkie post,
// status, the daemon's start) reads only the lines after it: its cost
// does not grow with the history. It is written every checkpointEvery
// lines by the writer that appends the line, never synced, and never
// needed: a reader that finds none, or one that does not match the log
// (damaged, behind a log that was replaced, its line not the one at its
// offset), folds the log from its first line instead.

// checkpointFile is the checkpoint's name in the state directory.
const checkpointFile = "checkpoint.json"

// checkpointEvery is how many lines a writer appends between checkpoints:
// a reader folds at most about that many lines.
const checkpointEvery = 16

// maxCheckpoint bounds what is read of a checkpoint, which sits in a
// directory an agent can write.
const maxCheckpoint = 1 << 20

type checkpoint struct {
	Layout  int                        `json:"layout"`
	N       int                        `json:"n"`        // the lines it sums up
	Lines   int                        `json:"lines"`    // the file's lines up to Offset (damaged ones too)
	Offset  int64                      `json:"offset"`   // where line N ends
	LineSum string                     `json:"line_crc"` // line N's checksum, hex
	LineLen int                        `json:"line_len"` // line N's length, its newline included
	At      time.Time                  `json:"at"`       // line N's time
	State   map[string]json.RawMessage `json:"state"`
}

// writeCheckpoint writes the view's fold as the checkpoint. A failure is
// no loss: readers fold the log instead.
func writeCheckpoint(dir string, v *logView) {
	cp := checkpoint{Layout: v.layout, N: v.n, Lines: v.lines, Offset: v.end, LineSum: fmt.Sprintf("%08x", v.lastSum),
		LineLen: v.lastLen, At: v.at, State: v.fold}
	b, err := json.Marshal(cp)
	if err != nil {
		return
	}
	// A new file renamed over the old one, not a rewrite in place: no
	// reader ever waits on a lease for it.
	if ReplaceUnsynced(filepath.Join(dir, checkpointFile), sealJSON(b), 0o644) == nil {
		v.cpN = v.n
	}
}

// startFromCheckpoint starts the empty view from the checkpoint, when
// there is one that matches the log open at fd (size bytes long).
func (l *Log) startFromCheckpoint(size int64) {
	cp, ok := readCheckpoint(filepath.Join(l.dir, checkpointFile))
	if !ok || cp.Offset > size || cp.LineLen < 1 || int64(cp.LineLen) > cp.Offset || cp.N < 1 || cp.Layout < 1 {
		return
	}
	line := make([]byte, cp.LineLen)
	if preadFull(l.fd, line, cp.Offset-int64(cp.LineLen)) != nil || line[len(line)-1] != '\n' {
		return
	}
	got, sum, ok := decodeLine(line[:len(line)-1])
	if !ok || got.N != cp.N || fmt.Sprintf("%08x", sum) != cp.LineSum {
		return
	}
	l.v = logView{fold: cp.State, n: cp.N, lines: cp.Lines, end: cp.Offset, lastSum: sum, lastLen: cp.LineLen, at: cp.At,
		layout: cp.Layout, size: cp.Offset, endsNL: true, cpN: cp.N}
	if l.v.fold == nil {
		l.v.fold = map[string]json.RawMessage{}
	}
}

// readCheckpoint reads and checks the checkpoint at path.
func readCheckpoint(path string) (checkpoint, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return checkpoint{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || plainStat(path, &st) != nil || st.Size > maxCheckpoint || st.Size < 2 {
		return checkpoint{}, false
	}
	b := make([]byte, st.Size)
	if preadFull(fd, b, 0) != nil || b[len(b)-1] != '\n' {
		return checkpoint{}, false
	}
	if _, ok := unseal(b[:len(b)-1]); !ok {
		return checkpoint{}, false
	}
	var cp checkpoint
	if json.Unmarshal(b[:len(b)-1], &cp) != nil {
		return checkpoint{}, false
	}
	return cp, true
}
