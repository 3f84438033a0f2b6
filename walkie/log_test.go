package walkie

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// logOf writes n changes to a fresh log and returns its directory and the
// state after each line (after[k] is the state once k+1 lines are in).
func logOf(t testing.TB, n int) (string, []*State) {
	t.Helper()
	dir := t.TempDir()
	l := OpenLog(dir)
	defer l.Close()
	var after []*State
	st := &State{}
	for i := range n {
		switch i % 4 {
		case 0:
			st.Running = &Attempt{Turn: i + 1, Agent: "a", Number: 1, Started: t0.Add(time.Duration(i) * time.Second), Session: "s"}
		case 1:
			st.Running, st.LastSeq, st.LastHash = nil, i, "sha256:x"
			st.AddCost(0.5, true)
		case 2:
			st.Status, st.Reason = StatusHalted, "a person looks"
		case 3:
			st.Status, st.Reason, st.ExtraRounds = "", "", st.ExtraRounds+1
		}
		wrote, err := l.Save(OpState, st, map[string]int{"turn": i + 1})
		must(t, err)
		if !wrote {
			t.Fatal("a change with an attempt was not written")
		}
		got, err := l.State()
		must(t, err)
		after = append(after, got)
	}
	return dir, after
}

// sameState compares two states but for the time of their last line.
func sameState(a, b *State) bool {
	x, y := *a, *b
	x.UpdatedAt, y.UpdatedAt = time.Time{}, time.Time{}
	return reflect.DeepEqual(&x, &y)
}

func TestLogFoldsEveryLine(t *testing.T) {
	dir, after := logOf(t, 40)
	os.Remove(filepath.Join(dir, checkpointFile)) // the fold from the first line
	st, err := LoadState(dir)
	must(t, err)
	if !sameState(st, after[len(after)-1]) {
		t.Errorf("fold %+v, want %+v", st, after[len(after)-1])
	}
	recs, err := LogAttempts(dir)
	must(t, err)
	if len(recs) != 40 || string(recs[39]) != `{"turn":40}` {
		t.Errorf("%d attempts, the last %s", len(recs), recs[len(recs)-1])
	}
	// A field removed is null in its line, and gone from the fold.
	b := readFile(t, filepath.Join(dir, LogFile))
	if !bytes.Contains(b, []byte(`"running":null`)) {
		t.Error("no line removes the running attempt")
	}
}

// Nothing changed, nothing to log: no line, no sync.
func TestLogSaveWithoutChange(t *testing.T) {
	dir := t.TempDir()
	l := OpenLog(dir)
	defer l.Close()
	st := &State{ExtraRounds: 1}
	if wrote, err := l.Save(OpExtend, st, nil); err != nil || !wrote {
		t.Fatalf("%v %v", wrote, err)
	}
	if wrote, err := l.Save(OpState, st, nil); err != nil || wrote {
		t.Fatalf("an unchanged state was written: %v %v", wrote, err)
	}
	if n := bytes.Count(readFile(t, filepath.Join(dir, LogFile)), []byte("\n")); n != 1 {
		t.Errorf("%d lines", n)
	}
}

// The power cut, on the log: its last line cut at every byte, or its
// tail zero-filled at every length (what a file system without a journal
// can leave). The state is the one before that line: nothing in it was
// acknowledged, since a change is acknowledged once its line is synced.
// The next append ends the torn bytes and names them, and the log then
// reads whole, with every line before and the new one.
func TestLogTornTail(t *testing.T) {
	dir, after := logOf(t, 5)
	path := filepath.Join(dir, LogFile)
	whole := readFile(t, path)
	last := bytes.LastIndexByte(whole[:len(whole)-1], '\n') + 1
	lineLen := len(whole) - last
	type cut struct {
		name string
		data []byte
	}
	var cuts []cut
	for k := range lineLen {
		cuts = append(cuts, cut{"cut", whole[:last+k]})
	}
	for z := 1; z <= lineLen+4; z++ {
		zeros := append([]byte(nil), whole...)
		if z <= lineLen {
			clear(zeros[len(zeros)-z:])
		} else {
			zeros = append(zeros, make([]byte, z-lineLen)...) // zeros past the end: the size grew, the data did not
			clear(zeros[last:])
		}
		cuts = append(cuts, cut{"zeros", zeros})
	}
	for _, c := range cuts {
		must(t, os.WriteFile(path, c.data, 0o644))
		os.Remove(filepath.Join(dir, checkpointFile))
		want := after[3]
		if bytes.Equal(c.data[:min(len(c.data), len(whole))], whole) && len(c.data) >= len(whole) {
			want = after[4] // zeros after a whole last line
		}
		st, err := LoadState(dir)
		if err != nil {
			t.Fatalf("%s at %d: %v", c.name, len(c.data), err)
		}
		if !sameState(st, want) {
			t.Fatalf("%s at %d: state %+v, want %+v", c.name, len(c.data), st, want)
		}
		l := OpenLog(dir)
		line, torn, err := l.Torn()
		must(t, err)
		if torn == nil && len(c.data) > last && !bytes.Equal(c.data, whole) {
			t.Fatalf("%s at %d: no torn tail reported", c.name, len(c.data))
		}
		if torn != nil && line != 5 && !(want == after[4] && line == 6) {
			t.Errorf("%s at %d: torn tail named at line %d", c.name, len(c.data), line)
		}
		next := *want
		next.ExtraRounds += 10
		if _, err := l.Save(OpExtend, &next, nil); err != nil {
			t.Fatalf("%s at %d: append after the torn tail: %v", c.name, len(c.data), err)
		}
		l.Close()
		got, err := LoadState(dir)
		if err != nil {
			t.Fatalf("%s at %d: the log after the append: %v\n%q", c.name, len(c.data), err, readFile(t, path)[last:])
		}
		if !sameState(got, &next) {
			t.Fatalf("%s at %d: after the append %+v, want %+v", c.name, len(c.data), got, &next)
		}
		recs, err := LogAttempts(dir)
		if err != nil || (len(recs) != 4 && len(recs) != 5) {
			t.Fatalf("%s at %d: %d attempts, %v", c.name, len(c.data), len(recs), err)
		}
	}
}

// A line damaged before a whole one is never skipped: the log is refused
// with the line and the fix, and nothing is written.
func TestLogDamageInTheMiddle(t *testing.T) {
	dir, _ := logOf(t, 5)
	path := filepath.Join(dir, LogFile)
	whole := readFile(t, path)
	lines := bytes.SplitAfter(whole, []byte("\n"))
	for _, c := range []struct {
		name string
		data func() []byte
		line int
	}{
		{"a flipped bit", func() []byte {
			b := append([]byte(nil), whole...)
			b[len(lines[0])+len(lines[1])+20] ^= 0x04
			return b
		}, 3},
		{"zeros in a line", func() []byte {
			b := append([]byte(nil), whole...)
			clear(b[len(lines[0])+5 : len(lines[0])+15])
			return b
		}, 2},
		{"a line removed", func() []byte { return bytes.Join([][]byte{lines[0], lines[1], lines[3], lines[4]}, nil) }, 3},
		{"a line repeated", func() []byte { return bytes.Join([][]byte{lines[0], lines[1], lines[1], lines[2]}, nil) }, 3},
		{"a line cut short", func() []byte {
			return bytes.Join([][]byte{lines[0], lines[1][:20], []byte("\n"), lines[2], lines[3]}, nil)
		}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := c.data()
			must(t, os.WriteFile(path, data, 0o644))
			os.Remove(filepath.Join(dir, checkpointFile))
			_, err := LoadState(dir)
			ie := asInput(t, err, path, c.line)
			if !strings.Contains(ie.Fix, "--drop-log-line") {
				t.Errorf("the fix does not say how to go on: %v", ie)
			}
			before := snapshotTree(t, dir)
			lock, err := LockRecord(dir)
			must(t, err)
			l := OpenLog(dir)
			_, err = l.Save(OpHalt, &State{Status: StatusHalted}, nil)
			l.Close()
			lock.Unlock()
			asInput(t, err, path, c.line)
			after := snapshotTree(t, dir)
			delete(after, "lock")
			delete(before, "lock")
			if d := before.diff(after); d != "" {
				t.Errorf("a refused write changed the disk: %s", d)
			}
			_, err = LogAttempts(dir)
			asInput(t, err, path, c.line)
		})
	}
}

// The checkpoint: written every checkpointEvery lines, read instead of
// the lines it sums up, and never trusted when it does not match the log.
func TestLogCheckpoint(t *testing.T) {
	dir, after := logOf(t, 3*checkpointEvery+5)
	want := after[len(after)-1]
	cpPath := filepath.Join(dir, checkpointFile)
	var cp checkpoint
	b := readFile(t, cpPath)
	must(t, json.Unmarshal(b[:len(b)-1], &cp))
	if cp.N != 3*checkpointEvery {
		t.Errorf("checkpoint at line %d, want %d", cp.N, 3*checkpointEvery)
	}
	l := OpenLog(dir)
	st, err := l.State()
	must(t, err)
	if !sameState(st, want) || l.v.cpN != cp.N {
		t.Errorf("from the checkpoint (line %d): %+v, want %+v", l.v.cpN, st, want)
	}
	l.Close()
	// A checkpoint that lies is not believed: its state changed (its
	// checksum fails), or a whole checkpoint of another log.
	bad := bytes.Replace(b, []byte(`"extra_rounds":`), []byte(`"extra_rounds":9`), 1)
	otherDir, _ := logOf(t, 2*checkpointEvery)
	for name, data := range map[string][]byte{
		"edited":      bad,
		"another log": readFile(t, filepath.Join(otherDir, checkpointFile)),
		"zeros":       make([]byte, len(b)),
		"cut":         b[:len(b)/2],
	} {
		must(t, os.WriteFile(cpPath, data, 0o644))
		l := OpenLog(dir)
		st, err := l.State()
		must(t, err)
		if !sameState(st, want) || l.v.cpN != 0 {
			t.Errorf("%s checkpoint: %+v (from line %d), want %+v from the first line", name, st, l.v.cpN, want)
		}
		l.Close()
	}
}

// A reader that keeps its log open catches up with what another writer
// appended, and reads only that.
func TestLogCatchesUp(t *testing.T) {
	dir, _ := logOf(t, 3)
	reader := OpenLog(dir)
	defer reader.Close()
	st, err := reader.State()
	must(t, err)
	end := reader.v.end
	must(t, SaveState(dir, &State{Status: StatusHalted, Reason: "by another process", LastSeq: st.LastSeq, CostUSD: st.CostUSD, MaxCostUSD: st.MaxCostUSD}))
	got, err := reader.State()
	must(t, err)
	if got.Status != StatusHalted || got.Reason != "by another process" || reader.v.n != 4 || reader.v.end <= end {
		t.Errorf("caught up to %+v (line %d)", got, reader.v.n)
	}
	// A log replaced behind its back (a repair) is read again whole.
	path := filepath.Join(dir, LogFile)
	b := readFile(t, path)
	must(t, os.Remove(path))
	must(t, os.WriteFile(path, b[:bytes.IndexByte(b, '\n')+1], 0o644))
	os.Remove(filepath.Join(dir, checkpointFile))
	got, err = reader.State()
	must(t, err)
	if got.Status != "" || reader.v.n != 1 {
		t.Errorf("after the log was replaced: %+v (line %d)", got, reader.v.n)
	}
}

// A log of a later layout is refused, not misread.
func TestLogNewerLayout(t *testing.T) {
	dir := t.TempDir()
	b, err := encodeLine(LogLine{N: 1, Op: OpInit, At: t0, Layout: LayoutVersion + 1})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, LogFile), b, 0o644))
	_, err = LoadState(dir)
	ie := asInput(t, err, filepath.Join(dir, LogFile), 1)
	if !strings.Contains(ie.Msg, "newer") {
		t.Errorf("%v", ie)
	}
}

// What is in the log's place but a plain file is refused.
func TestLogNotAPlainFile(t *testing.T) {
	dir, _ := logOf(t, 2)
	path := filepath.Join(dir, LogFile)
	must(t, os.Rename(path, path+".real"))
	must(t, os.Symlink(path+".real", path))
	_, err := LoadState(dir)
	asInput(t, err, path, 0)
	must(t, os.Remove(path))
	must(t, os.Link(path+".real", path))
	_, err = LoadState(dir)
	asInput(t, err, path, 0)
}

// FuzzLogTail: whatever follows the whole lines of a log (a crash's
// bytes, zeros, lines that look whole), reading it never panics; a read
// that succeeds holds at least the whole lines before; and the next
// append always leaves a log that reads again, with one line more.
func FuzzLogTail(f *testing.F) {
	dir, _ := logOf(f, 3)
	whole := readFile(f, filepath.Join(dir, LogFile))
	lines := bytes.SplitAfter(whole, []byte("\n"))
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	f.Add(lines[1][:30])
	f.Add(append(lines[2][:len(lines[2])-1:len(lines[2])-1], " \n"...))
	f.Add(append(append([]byte("junk\n"), lines[1]...), 0, 0))
	f.Fuzz(func(t *testing.T, tail []byte) {
		d := t.TempDir()
		path := filepath.Join(d, LogFile)
		must(t, os.WriteFile(path, append(append([]byte(nil), whole...), tail...), 0o644))
		l := OpenLog(d)
		defer l.Close()
		st, err := l.State()
		if err != nil {
			return // refused, as a damaged middle must be
		}
		if l.v.n < 3 {
			t.Fatalf("the read folded %d lines of the 3 whole ones", l.v.n)
		}
		n := l.v.n
		st.ExtraRounds += 7
		if _, err := l.Save(OpExtend, st, nil); err != nil {
			t.Fatalf("append: %v", err)
		}
		again := OpenLog(d)
		defer again.Close()
		got, err := again.State()
		if err != nil {
			t.Fatalf("the log after the append does not read: %v\n%q", err, readFile(t, path)[len(whole):])
		}
		if again.v.n != n+1 || got.ExtraRounds != st.ExtraRounds {
			t.Fatalf("after the append: line %d, %+v", again.v.n, got)
		}
	})
}

// Writers in parallel on one log (posts in turn, supervisor notes,
// extensions, halts and resumes, and a controller logging attempts that
// charge a cost): each through its own Log, as separate processes do.
// Every change acknowledged is in the log exactly once, and the fold holds
// them all.
func TestLogConcurrentWriters(t *testing.T) {
	const each = 12
	file := newDebate(t, each, "a", "b")
	dir := StateDir(file, "d")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	run := func(f func() error) {
		wg.Go(func() {
			if err := f(); err != nil {
				errs <- err
			}
		})
	}
	for _, p := range []string{"a", "b"} {
		run(func() error {
			for i := 0; i < each; {
				_, err := Append(file, turn(p, p+" says "+itoa(i)+"\n"))
				var re *RefusedError
				switch {
				case err == nil:
					i++
				case errors.As(err, &re) && re.OutOfTurn:
					if _, err := WaitTurn(ctx, file, p); err != nil {
						return err
					}
				case errors.As(err, &re):
					time.Sleep(time.Millisecond) // halted for a moment
				default:
					return err
				}
			}
			return nil
		})
	}
	run(func() error {
		for range each {
			if _, err := Append(file, supervisorNote("A note.\n")); err != nil {
				return err
			}
		}
		return nil
	})
	run(func() error {
		for range each {
			if _, err := Extend(file, 1); err != nil {
				return err
			}
		}
		return nil
	})
	run(func() error {
		for range each {
			if err := Halt(file, "a look"); err != nil {
				return err
			}
			if err := Resume(file); err != nil {
				return err
			}
		}
		return nil
	})
	run(func() error {
		for i := range each {
			_, _, err := ChangeState(file, dir, StateChange{Op: OpEnded, Attempt: map[string]int{"attempt": i}}, func(_ *Doc, _ []byte, s *State) error {
				s.AddCost(0.25, true)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	d := mustVerify(t, file)
	st, err := LoadState(dir)
	must(t, err)
	if p := d.Progress(); st.LastSeq != p.Seq || p.Turns != 2*each {
		t.Errorf("the log's last entry %d, the record's %d (%d turns)", st.LastSeq, p.Seq, p.Turns)
	}
	if st.ExtraRounds != each || st.CostUSD != 0.25*each || st.Status != "" {
		t.Errorf("fold: %d extra rounds, $%.2f, status %q; want %d, $%.2f, open", st.ExtraRounds, st.CostUSD, st.Status, each, 0.25*each)
	}
	recs, err := LogAttempts(dir)
	must(t, err)
	seen := map[string]int{}
	for _, r := range recs {
		seen[string(r)]++
	}
	for i := range each {
		if n := seen[`{"attempt":`+itoa(i)+`}`]; n != 1 {
			t.Errorf("attempt %d logged %d times", i, n)
		}
	}
	ops := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(readFile(t, filepath.Join(dir, LogFile))), []byte("\n")) {
		l, _, ok := decodeLine(line)
		if !ok {
			t.Fatalf("a line not whole: %s", line)
		}
		ops[l.Op]++
	}
	if ops[OpExtend] != each || ops[OpHalt] != each || ops[OpResume] != each || ops[OpEnded] != each || ops[OpAppended] != 3*each {
		t.Errorf("lines by op: %v", ops)
	}
}
