package walkie

import (
	"bytes"
	"strings"
	"testing"
)

// linesOf is lines from..to (1-based, inclusive; to 0 = the end) of b,
// as sed -n 'FROM,TOp' prints them.
func linesOf(b []byte, from, to int) []byte {
	ls := bytes.SplitAfter(b, []byte("\n"))
	if to == 0 || to > len(ls) {
		to = len(ls)
	}
	return bytes.Join(ls[from-1:to], nil)
}

// TestReadingCoversTheRecord: the pieces, read one after the other, are
// the whole record, byte for byte, with no piece over its bounds but a
// single line longer than a piece; they end at entry boundaries unless an
// entry alone is too long; and the pieces planned before a turn are those
// planned after it, but for the last.
func TestReadingCoversTheRecord(t *testing.T) {
	file := newDebate(t, 40, "claude", "codex")
	long := strings.Repeat("A line of argument that runs for a while, as they do.\n", 500) // ~27 KB
	var prev Reading
	for i := 1; i <= 60; i++ {
		who := []string{"claude", "codex"}[(i-1)%2]
		body := strings.Repeat("Turn text, of a usual length for a turn in a debate.\n", 3*(i%7+1))
		switch {
		case i == 17:
			body = long
		case i%9 == 0:
			mustAppend(t, file, supervisorNote("A note from a person.\n"))
		}
		mustAppend(t, file, turn(who, body))
		data := readFile(t, file)
		d := mustLoad(t, file)
		r := d.Reading("claude", ReadPieceBytes)
		var got []byte
		for k, p := range r.Pieces {
			piece := linesOf(data, p.From, p.To)
			got = append(got, piece...)
			if k < len(r.Pieces)-1 && p.To == 0 || k == len(r.Pieces)-1 && p.To != 0 {
				t.Fatalf("turn %d: only the last piece is open-ended: %+v", i, r.Pieces)
			}
			if len(piece) > ReadPieceBytes && bytes.Count(piece, []byte("\n")) > 1 || bytes.Count(piece, []byte("\n")) > ReadPieceLines {
				t.Fatalf("turn %d: piece %d is %d bytes, %d lines", i, k+1, len(piece), bytes.Count(piece, []byte("\n")))
			}
			if p.To != 0 && !endsAnEntry(d, p.To) {
				if e := entryAt(d, p.To); e == nil || len(e.Raw) <= ReadPieceBytes {
					t.Fatalf("turn %d: piece %d ends at line %d, inside an entry that fits a piece", i, k+1, p.To)
				}
			}
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("turn %d: the pieces read %d bytes of %d", i, len(got), len(data))
		}
		for k := 0; k+1 < len(prev.Pieces); k++ {
			if prev.Pieces[k] != r.Pieces[k] {
				t.Fatalf("turn %d: piece %d moved from %+v to %+v", i, k+1, prev.Pieces[k], r.Pieces[k])
			}
		}
		prev = r
	}
	if len(prev.Pieces) < 4 {
		t.Fatalf("60 turns read in %d pieces: the test does not cut the record", len(prev.Pieces))
	}
}

// TestReadingWhatIsNew: the new part starts after the agent's own last
// turn and names the turns from there; an agent that has not spoken yet
// reads everything as new.
func TestReadingWhatIsNew(t *testing.T) {
	file := newDebate(t, 6, "a", "b", "c")
	r := mustLoad(t, file).Reading("a", ReadPieceBytes)
	if r.OwnTurn != 0 || r.NewFrom != 1 || r.NewEntries != 0 || len(r.Pieces) != 1 || r.Pieces[0].From != 1 || r.Pieces[0].To != 0 {
		t.Fatalf("before the first turn: %+v", r)
	}
	mustAppend(t, file, turn("a", "One.\n"), turn("b", "Two.\n"), supervisorNote("Note.\n"), turn("c", "Three.\n"), turn("a", "Four.\n"), turn("b", "Five.\n"))
	d := mustLoad(t, file)
	for _, c := range []struct {
		agent               string
		own, first, last, n int
		after               int // the entry whose marker the new part follows, by seq; 0 = the top
	}{
		{"a", 4, 5, 5, 1, 5},
		{"b", 5, 0, 0, 0, 6},
		{"c", 3, 4, 5, 2, 4},
		{"d", 0, 1, 5, 6, 0},
	} {
		r := d.Reading(c.agent, ReadPieceBytes)
		from := 1
		if c.after > 0 {
			from = d.Entries[c.after-1].MarkLine + 1
		}
		if r.OwnTurn != c.own || r.NewFirstTurn != c.first || r.NewLastTurn != c.last || r.NewEntries != c.n || r.NewFrom != from {
			t.Errorf("%s: %+v, want own turn %d, new turns %d-%d (%d entries) from line %d", c.agent, r, c.own, c.first, c.last, c.n, from)
		}
	}
}

// endsAnEntry reports whether line is the header's last or a marker line.
func endsAnEntry(d *Doc, line int) bool {
	if line == bytes.Count(d.Header, []byte("\n")) {
		return true
	}
	for _, e := range d.Entries {
		if e.MarkLine == line {
			return true
		}
	}
	return false
}

// entryAt is the entry that holds line.
func entryAt(d *Doc, line int) *Entry {
	for i := range d.Entries {
		if e := &d.Entries[i]; line <= e.MarkLine {
			return e
		}
	}
	return nil
}
