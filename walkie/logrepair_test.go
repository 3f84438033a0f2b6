package walkie

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A torn log tail is named and cut by a repair, its bytes kept beside the
// log; the state is the one before it, and the debate goes on.
func TestRepairLogTornTail(t *testing.T) {
	file := newDebate(t, 5, "claude", "codex")
	mustAppend(t, file, turn("claude", "One.\n"))
	must(t, Halt(file, "a look"))
	dir := StateDir(file, "d")
	path := filepath.Join(dir, LogFile)
	whole := readFile(t, path)
	if r, err := RepairLog(file); err != nil || r != (LogRepaired{}) {
		t.Fatalf("a whole log repaired: %+v %v", r, err)
	}
	torn := []byte(`{"n":4,"op":"halt","at":"2026-01-0`)
	must(t, os.WriteFile(path, append(append([]byte(nil), whole...), torn...), 0o644))
	r, err := RepairLog(file)
	must(t, err)
	lines := bytes.Count(whole, []byte("\n"))
	if r.Line != lines+1 || r.Bytes != int64(len(torn)) || r.Dropped {
		t.Errorf("repair named %+v, want line %d, %d bytes", r, lines+1, len(torn))
	}
	if got := readFile(t, r.Side); !bytes.Equal(got, torn) {
		t.Errorf("the side file holds %q", got)
	}
	if got := readFile(t, path); !bytes.Equal(got, whole) {
		t.Errorf("the log after the repair:\n%s", got)
	}
	must(t, Resume(file))
	mustAppend(t, file, turn("codex", "Two.\n"))
	mustVerify(t, file)
}

// A line damaged in the middle: every reader refuses it, naming the line;
// a repair refuses to drop another line, or to drop when nothing is
// damaged; --drop-log-line of the named line gives up that line alone,
// keeps the old log, and the log then reads with every other change.
func TestRepairLogDropLine(t *testing.T) {
	file := newDebate(t, 5, "claude", "codex")
	dir := StateDir(file, "d")
	path := filepath.Join(dir, LogFile)
	mustAppend(t, file, turn("claude", "One.\n"))
	if _, err := RepairLog(file, 2); err == nil || !strings.Contains(err.Error(), "no damaged line") {
		t.Fatalf("a drop from a whole log: %v", err)
	}
	_, err := Extend(file, 2)
	must(t, err)
	must(t, Halt(file, "a look"))
	whole := readFile(t, path)
	lines := bytes.SplitAfter(whole, []byte("\n"))
	n := len(lines) - 1 // the halt's line is the last; the extension's before it
	extendLine := n - 1
	bad := append([]byte(nil), whole...)
	off := len(bytes.Join(lines[:extendLine-1], nil))
	bad[off+12] ^= 0x01
	must(t, os.WriteFile(path, bad, 0o644))

	_, err = LoadState(dir)
	ie := asInput(t, err, path, extendLine)
	if !strings.Contains(ie.Fix, "--drop-log-line "+itoa(extendLine)) {
		t.Errorf("the fix does not name the line: %s", ie.Fix)
	}
	if _, err := RepairLog(file, 1); err == nil || !strings.Contains(err.Error(), "at line "+itoa(extendLine)) {
		t.Fatalf("a drop of another line: %v", err)
	}
	if got := readFile(t, path); !bytes.Equal(got, bad) {
		t.Fatal("a refused repair changed the log")
	}
	r, err := RepairLog(file, extendLine)
	must(t, err)
	if !r.Dropped || r.Line != extendLine {
		t.Errorf("repair: %+v", r)
	}
	if got := readFile(t, r.Side); !bytes.Equal(got, bad) {
		t.Error("the old log is not kept as it was")
	}
	st, err := LoadState(dir)
	must(t, err)
	if st.ExtraRounds != 0 || st.Status != StatusHalted || st.LastSeq != 1 {
		t.Errorf("after the drop: %+v (the extension given up, the halt and the post kept)", st)
	}
	if !bytes.Contains(readFile(t, path), []byte(`"op":"dropped"`)) {
		t.Error("no line says what was dropped")
	}
	must(t, Resume(file))
	mustAppend(t, file, turn("codex", "Two.\n"))
	mustVerify(t, file)
}
