package walkie

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// A debate directory of layout 1 (walkie before the log) keeps its state
// in state.json, replaced whole, and its attempts in turns.jsonl. Such a
// directory is read as it is until the first change, which converts it
// under the record lock: the log is written whole to a new file, synced,
// renamed into place and its directory synced, and only then are the old
// files moved aside to layout-1/, never read again. A crash anywhere
// leaves either the old files alone (the next writer converts again) or
// the durable log (which wins over them).

// Layout-1 files, and where the conversion moves them.
const (
	legacyState = "state.json"
	legacyTurns = "turns.jsonl"
	legacyDir   = "layout-1"
)

// hasLegacy reports whether dir holds a layout-1 state or turn log.
func hasLegacy(dir string) bool {
	for _, name := range []string{legacyState, legacyTurns} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// migrate converts the layout-1 directory dir to the log. The caller holds
// the record lock.
func migrate(dir string) error {
	st, err := loadLegacyState(dir)
	if err != nil {
		return err
	}
	recs, err := readLegacyTurns(dir)
	if err != nil {
		return err
	}
	b, err := legacyLog(st, recs)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, LogFile), b, 0o644); err != nil {
		return fmt.Errorf("convert %s to the log: %w", dir, err)
	}
	// The log is durable: the old files are history now.
	if err := os.MkdirAll(filepath.Join(dir, legacyDir), 0o755); err != nil {
		return err
	}
	for _, name := range []string{legacyState, legacyTurns} {
		err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, legacyDir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("move %s aside after converting it: %w", name, err)
		}
	}
	return nil
}

// legacyLog is the log of a layout-1 debate: its state as the first
// line, then each attempt turns.jsonl holds.
func legacyLog(st *State, recs []json.RawMessage) ([]byte, error) {
	var v logView
	set, err := v.patch(st)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	var out bytes.Buffer
	lines := []LogLine{{Op: OpMigrated, Layout: LayoutVersion, Set: set}}
	for _, r := range recs {
		lines = append(lines, LogLine{Op: OpImported, Attempt: r})
	}
	for i, l := range lines {
		l.N, l.At = i+1, now
		b, err := encodeLine(l)
		if err != nil {
			return nil, err
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

// loadLegacyState reads a layout-1 state.json; none is an empty state.
func loadLegacyState(dir string) (*State, error) {
	s := &State{}
	b, err := ReadSideFile(dir, legacyState, MaxSideFile)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, &InputError{File: filepath.Join(dir, legacyState), Msg: "state record is not valid JSON: " + err.Error(),
			Fix: "remove the file; walkie rebuilds what it needs from the record"}
	}
	return s, nil
}

// readLegacyTurns reads the lines of a layout-1 turns.jsonl, each a JSON
// object. A line cut short by a crash (its JSON ends early) is skipped;
// other damage is an error naming the line.
func readLegacyTurns(dir string) ([]json.RawMessage, error) {
	path := filepath.Join(dir, legacyTurns)
	b, err := ReadSideFile(dir, legacyTurns, MaxSideFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) && se.Offset == int64(len(line)) {
				continue // cut short
			}
			return out, &InputError{File: path, Line: i + 1, Msg: "is not a JSON object: " + err.Error(),
				Fix: "remove or correct that line; it is one attempt's record"}
		}
		out = append(out, json.RawMessage(line))
	}
	return out, nil
}
