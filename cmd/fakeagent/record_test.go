package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRecord(t *testing.T) {
	tests := []struct {
		name         string
		in           string
		turns, parts int
	}{
		{"briefing only", briefing, 0, 2},
		{"one turn", briefing + turn1, 1, 2},
		{"wrong separators do not count", briefing + turn1 + "\n## Turn 2 - codex\nx\n## Turn 3 ·codex\n", 1, 2},
		{"heading must start a line", briefing + " ## Turn 2 · codex\n", 0, 2},
		{"no front matter", "# Briefing\n\n## Turn 1 · a\n", 1, 0},
		{"flow list", "---\nparticipants:\n  - a\n  - b\n  - c\n---\n", 0, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseRecord([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if r.turns != tc.turns || len(r.participants) != tc.parts {
				t.Errorf("turns %d participants %v, want %d and %d", r.turns, r.participants, tc.turns, tc.parts)
			}
		})
	}
	if _, err := parseRecord([]byte("---\nparticipants: [a\n---\n")); err == nil {
		t.Errorf("bad front matter parsed")
	}
}

func TestRoundOf(t *testing.T) {
	for _, tc := range []struct{ turn, n, round int }{
		{1, 2, 1}, {2, 2, 1}, {3, 2, 2}, {4, 2, 2}, {5, 3, 2}, {7, 3, 3}, {3, 0, 3}, {0, 2, 1},
	} {
		if got := roundOf(tc.turn, tc.n); got != tc.round {
			t.Errorf("roundOf(%d, %d) = %d, want %d", tc.turn, tc.n, got, tc.round)
		}
	}
}

func TestApplyScript(t *testing.T) {
	base := step{Behavior: "append", Chatter: 3, Author: "intruder"}
	script := `
chatter: 1
delay: 250ms
steps:
  - behavior: hang
  - exit_code: 5
    bodies: [a, b]
`
	tests := []struct {
		k    int
		want func(step) bool
	}{
		{0, func(s step) bool { return s.Behavior == "hang" && s.Chatter == 1 && s.Delay == 250*time.Millisecond }},
		{1, func(s step) bool {
			return s.Behavior == "append" && *s.ExitCode == 5 && len(s.Bodies) == 2 && s.Author == "intruder"
		}},
		{9, func(s step) bool { return s.Behavior == "append" && *s.ExitCode == 5 }},
	}
	for _, tc := range tests {
		st, err := applyScript(base, []byte(script), tc.k)
		if err != nil {
			t.Fatal(err)
		}
		if !tc.want(st) {
			t.Errorf("step %d = %+v", tc.k, st)
		}
	}
	for _, bad := range []string{"behaviour: hang\n", "steps:\n  - behavior: dance\n", "delay: soon\n", "chatter: -1\n", "steps: 3\n", "[1, 2]"} {
		if _, err := applyScript(base, []byte(bad), 0); err == nil {
			t.Errorf("script %q accepted", bad)
		}
	}
	// An empty script changes nothing.
	if st, err := applyScript(base, nil, 0); err != nil || st.Chatter != 3 {
		t.Errorf("empty script: %+v, %v", st, err)
	}
}

// FuzzApplyScript: any script either fails cleanly or yields a valid step.
func FuzzApplyScript(f *testing.F) {
	f.Add([]byte("behavior: hang\nsteps:\n  - {}\n  - exit_code: 3\n"), uint8(1))
	f.Add([]byte("bodies: [a, b]\nsign_from: 2\ndelay: 1s\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		st, err := applyScript(step{Behavior: "append"}, data, int(k))
		if err == nil && st.validate() != nil {
			t.Fatalf("invalid step accepted: %+v", st)
		}
	})
}

// FuzzParseRecord: any file parses or fails without panicking, and the
// turn count never exceeds the number of headings' prefixes.
func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(briefing + turn1))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseRecord(data)
		if err != nil {
			return
		}
		if r.turns > strings.Count(string(data), "## Turn ") {
			t.Fatalf("counted %d turns", r.turns)
		}
	})
}

func TestEditSection(t *testing.T) {
	in := []byte(briefing + turn1)
	out, err := editSection(in, briefingRE)
	if err != nil || !strings.Contains(string(out), "\ntampered the shape") || len(out) == len(in) && string(out) == string(in) {
		t.Errorf("edit briefing: %q, %v", out, err)
	}
	if _, err := editSection([]byte(briefing), firstTurnRE); err == nil {
		t.Errorf("edited a turn that does not exist")
	}
	if _, err := editSection([]byte("# Briefing\n\n## Turn 1 · a\nx"), briefingRE); err == nil {
		t.Errorf("edited an empty briefing")
	}
}

func TestFloodIsExactAndStable(t *testing.T) {
	for _, n := range []int64{0, 1, 99, 100, 12345} {
		var b strings.Builder
		w := newBufWriter(&b)
		flood(w, n)
		w.Flush()
		if int64(b.Len()) != n {
			t.Errorf("flood(%d) wrote %d bytes", n, b.Len())
		}
	}
}

func newBufWriter(w *strings.Builder) *bufio.Writer { return bufio.NewWriter(w) }

// A when: entry applies when all its conditions hold, the first that
// matches wins, and an entry with a misspelt key is refused.
func TestApplyWhen(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "parse.py"), []byte("def parse(s):\n    return []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := parseRecord([]byte("---\nid: rt-3\nimplementer: ada\nreviewers: [brook, cy]\n---\n# Briefing\nb\n\n## Turn 1 · ada\ndone\n\n## Turn 2 · brook\n**request changes** · 1 blocking\n\n## Turn 3 · cy\n**approve** · 0 blocking\n"))
	if err != nil || rec.id != "rt-3" || rec.lastBlocker != "brook" || len(rec.participants) != 3 {
		t.Fatalf("record %+v, %v", rec, err)
	}
	facts := whenFacts{rec: rec, workspace: ws}
	script := `verdict: block
when:
  - file: parse.py
    contains: raise
    verdict: a
  - file: parse.py
    contains: "return []"
    last_blocker: cy
    verdict: b
  - file: parse.py
    lacks: raise
    id: "-3$"
    verdict: c
  - verdict: d
`
	st, err := applyWhen(step{Behavior: "verdict", Verdict: "block"}, []byte(script), facts)
	if err != nil || st.Verdict != "c" {
		t.Fatalf("verdict %q, %v; want the third entry's", st.Verdict, err)
	}
	if _, err := applyScript(step{Behavior: "verdict"}, []byte("when:\n  - fiel: x\n"), 0); err == nil {
		t.Fatal("a misspelt when key was accepted")
	}
}
