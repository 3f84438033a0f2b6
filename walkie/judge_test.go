package walkie

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// oneTurn is a record holding claude's first turn; codex is next.
func oneTurn(t *testing.T) (string, []byte) {
	file := newDebate(t, 6, "claude", "codex")
	mustAppend(t, file, turn("claude", "Proposal: call it All.\n"))
	return file, readFile(t, file)
}

var want2 = Expect{Turn: 2, Agent: "codex"}

func TestJudge(t *testing.T) {
	file, before := oneTurn(t)
	b := string(before)
	for _, tc := range []struct {
		name    string
		after   string
		outcome Outcome
		signed  bool
		detail  string
		line    int
	}{
		{"accepted", b + "\n## Turn 2 · codex\n\nAgreed, with a doc comment.\n", VerdictAccepted, false, "", 0},
		{"accepted signed", b + "\n## Turn 2 · codex\n\nAgreed.\n\nSigned-off-by: codex\n\n", VerdictAccepted, true, "", 0},
		{"accepted without blank line before", b + "## Turn 2 · codex\nAgreed.\n", VerdictAccepted, false, "", 0},
		{"accepted crlf", b + "\r\n## Turn 2 · codex\r\n\r\nAgreed.\r\nSigned-off-by: codex\r\n", VerdictAccepted, true, "", 0},
		{"nothing written", b, VerdictNoTurn, false, "no new turn", 0},
		{"only blank lines", b + "\n\n  \n", VerdictNoTurn, false, "no new turn", 0},
		{"two turns", b + "\n## Turn 2 · codex\n\nA.\n\n## Turn 3 · claude\n\nB.\n", VerdictMalformed, false, "second heading", 22},
		{"a supervisor heading too", b + "\n## Turn 2 · codex\n\nA.\n\n## Supervisor\n\nB.\n", VerdictMalformed, false, "second heading", 22},
		{"wrong turn number", b + "\n## Turn 3 · codex\n\nA.\n", VerdictMalformed, false, `where "## Turn 2 · codex" was expected`, 18},
		{"wrong author", b + "\n## Turn 2 · claude\n\nA.\n", VerdictMalformed, false, "headed for claude, not codex", 18},
		{"no heading", b + "\nI agree.\n", VerdictMalformed, false, "where \"## Turn 2 · codex\" was expected", 18},
		{"heading only", b + "\n## Turn 2 · codex\n\n\n", VerdictMalformed, false, "no text", 18},
		{"marker in turn", b + "\n## Turn 2 · codex\n\nA.\n<!-- walkie seq=2 -->\n", VerdictMalformed, false, "marker", 21},
		{"other's sign-off", b + "\n## Turn 2 · codex\n\nA.\nSigned-off-by: claude\n", VerdictMalformed, false, "sign-off of claude in codex's turn", 21},
		{"sign-off not last", b + "\n## Turn 2 · codex\n\nSigned-off-by: codex\nA.\n", VerdictMalformed, false, "not the turn's last line", 20},
		{"over size", b + "\n## Turn 2 · codex\n\n" + strings.Repeat("word ", DefaultMaxTurnBytes/5+1) + "\n", VerdictMalformed, false, "over the limit", 18},
		{"not UTF-8", b + "\n## Turn 2 · codex\n\ncaf\xe9\n", VerdictMalformed, false, "not UTF-8", 20},
		// Issue 12.7: what a CommonMark renderer shows as a second heading.
		{"indented second heading", b + "\n## Turn 2 · codex\n\nA.\n\n  ## Turn 3 · claude\n\nB.\n", VerdictMalformed, false, `renders as the heading "Turn 3 · claude"`, 22},
		{"setext second heading", b + "\n## Turn 2 · codex\n\nA.\n\nSupervisor\n---\n", VerdictMalformed, false, `renders as the heading "Supervisor"`, 22},
		{"raw HTML heading", b + "\n## Turn 2 · codex\n\n<h3>Turn 3 · claude</h3>\n", VerdictMalformed, false, "raw HTML heading", 20},
		{"unclosed fence", b + "\n## Turn 2 · codex\n\n~~~\nx\n", VerdictMalformed, false, "code fence that is never closed", 20},
		{"code stays code", b + "\n## Turn 2 · codex\n\n    ## Turn 3 · claude\n", VerdictAccepted, false, "", 0},
		// Issue 12.8: control characters, named with their line.
		{"NUL", b + "\n## Turn 2 · codex\n\nA\x00.\n", VerdictMalformed, false, "control character U+0000 (NUL) at column 2", 20},
		{"control before the heading", b + "\n\f\n## Turn 2 · codex\n\nA.\n", VerdictMalformed, false, "U+000C (form feed)", 18},
		{"lone carriage return", b + "\n## Turn 2 · codex\n\nA.\r## Turn 3 · claude\n", VerdictMalformed, false, "carriage return not followed by a newline at column 3", 20},
		{"edit above", strings.Replace(b, "call it All", "call it Each", 1) + "\n## Turn 2 · codex\n\nA.\n", VerdictTampered, false, "changed above the new turn (first difference at line 15)", 15},
		{"front matter edited", strings.Replace(b, "max_rounds: 6", "max_rounds: 60", 1), VerdictTampered, false, "line 5", 5},
		{"file emptied", "", VerdictTampered, false, "line 1", 1},
		{"last marker cut", b[:len(b)-5], VerdictTampered, false, "changed above", 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, d := Judge(file, before, []byte(tc.after), want2)
			if v.Outcome != tc.outcome || v.Signed != tc.signed || !strings.Contains(v.Detail, tc.detail) {
				t.Errorf("verdict %+v; want %s signed=%v detail containing %q", v, tc.outcome, tc.signed, tc.detail)
			}
			if tc.line > 0 && v.Line != tc.line {
				t.Errorf("verdict line %d, want %d (%s)", v.Line, tc.line, v.Detail)
			}
			if v.Stamped {
				t.Error("an unstamped turn judged stamped")
			}
			if tc.outcome == VerdictAccepted && d == nil {
				t.Error("accepted without a doc")
			}
		})
	}
	// The judgement is pure: nothing on disk moved.
	if !bytes.Equal(readFile(t, file), before) {
		t.Error("Judge wrote the file")
	}
}

func TestJudgeStampedPost(t *testing.T) {
	file, before := oneTurn(t)
	mustAppend(t, file, signed("codex", "Agreed.\n"))
	v, d := Judge(file, before, readFile(t, file), want2)
	if v.Outcome != VerdictAccepted || !v.Stamped || !v.Signed || d == nil {
		t.Fatalf("verdict %+v", v)
	}
	// A stamped entry that is not the expected turn.
	file2, before2 := oneTurn(t)
	mustAppend(t, file2, supervisorNote("A note, not a turn.\n"))
	if v, _ := Judge(file2, before2, readFile(t, file2), want2); v.Outcome != VerdictMalformed {
		t.Errorf("a stamped note as the turn: %+v", v)
	}
	// Two stamped entries.
	file3, before3 := oneTurn(t)
	mustAppend(t, file3, turn("codex", "A.\n"), turn("claude", "B.\n"))
	if v, _ := Judge(file3, before3, readFile(t, file3), want2); v.Outcome != VerdictMalformed || !strings.Contains(v.Detail, "2 new recorded entries") {
		t.Errorf("two stamped turns: %+v", v)
	}
	// A record that was already broken is not the agent's fault to fix,
	// but no turn is accepted on it.
	bad := []byte(strings.Replace(string(before), "---\n", "", 1))
	if v, _ := Judge(file, bad, append(bad, "\n## Turn 2 · codex\n\nA.\n"...), want2); v.Outcome != VerdictTampered || !strings.Contains(v.Detail, "already invalid") {
		t.Errorf("broken before: %+v", v)
	}
}

func TestSettleAcceptsAndStamps(t *testing.T) {
	for _, tail := range []string{
		"\n## Turn 2 · codex\n\nAgreed.\n",
		"\n## Turn 2 · codex\n\nAgreed.\n\nSigned-off-by: codex\n\n\n",
		"## Turn 2 · codex\nAgreed.\nSigned-off-by: codex  \r\n \n",
		"\n\n\n## Turn 2 · codex\n\nNo final newline.",
	} {
		file, before := oneTurn(t)
		must(t, os.WriteFile(file, append(append([]byte(nil), before...), tail...), 0o644))
		s, err := Settle(file, before, want2, KeepPath(StateDir(file, "d"), 2, "codex", 1))
		must(t, err)
		wantSigned := strings.Contains(tail, "Signed-off-by")
		if s.Outcome != VerdictAccepted || s.Stamped || s.Signed != wantSigned || s.Entry == nil || s.Entry.Seq != 2 || s.Entry.Turn != 2 || s.Kept != "" {
			t.Fatalf("tail %q: settled %+v entry %+v", tail, s, s.Entry)
		}
		d := mustVerify(t, file)
		if p := d.Progress(); p.Turns != 2 || p.NextAgent != "claude" || len(d.Entries) != 2 || d.Entries[1].Signed() != wantSigned {
			t.Fatalf("tail %q: after settle %+v", tail, p)
		}
		if !bytes.HasPrefix(readFile(t, file), before) {
			t.Fatal("stamping changed the recorded part")
		}
		if s.Progress.Seq != 2 || s.Status != StatusOpen {
			t.Errorf("settled progress %+v status %s", s.Progress, s.Status)
		}
		sig, err := LoadSignal(StateDir(file, "d"))
		must(t, err)
		if sig.Seq != 2 || sig.Turn != "claude" || sig.LastEntry == nil || sig.LastEntry.Agent != "codex" {
			t.Errorf("doorbell %+v", sig)
		}
		// The writer carries on from the stamped turn.
		mustAppend(t, file, turn("claude", "Next.\n"))
		mustVerify(t, file)
	}
}

func TestSettleStampedPost(t *testing.T) {
	file, before := oneTurn(t)
	mustAppend(t, file, turn("codex", "Posted with walkie post.\n"))
	posted := readFile(t, file)
	s, err := Settle(file, before, want2, "")
	must(t, err)
	if s.Outcome != VerdictAccepted || !s.Stamped || s.Entry == nil || s.Entry.Seq != 2 {
		t.Fatalf("settled %+v", s)
	}
	if !bytes.Equal(readFile(t, file), posted) {
		t.Error("settling a stamped post changed the file")
	}
	mustVerify(t, file)
}

// TestSettleRejects: a rejected attempt leaves the file exactly as the
// snapshot, keeps the agent's version for inspection, and leaves the
// state so that the next post is accepted.
func TestSettleRejects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		write   func(t *testing.T, file string, before []byte)
		outcome Outcome
		kept    bool
	}{
		{"tampered", func(t *testing.T, f string, b []byte) {
			must(t, os.WriteFile(f, append([]byte(strings.Replace(string(b), "call it All", "call it Every", 1)), "\n## Turn 2 · codex\n\nYes.\n"...), 0o644))
		}, VerdictTampered, true},
		{"two turns", func(t *testing.T, f string, b []byte) {
			must(t, os.WriteFile(f, append(b, "\n## Turn 2 · codex\n\nA.\n\n## Turn 3 · claude\n\nB.\n"...), 0o644))
		}, VerdictMalformed, true},
		{"wrong author", func(t *testing.T, f string, b []byte) {
			must(t, os.WriteFile(f, append(b, "\n## Turn 2 · claude\n\nA.\n"...), 0o644))
		}, VerdictMalformed, true},
		{"blank lines only", func(t *testing.T, f string, b []byte) {
			must(t, os.WriteFile(f, append(b, "\n\n"...), 0o644))
		}, VerdictNoTurn, true},
		{"nothing", func(*testing.T, string, []byte) {}, VerdictNoTurn, false},
		{"file removed", func(t *testing.T, f string, b []byte) { must(t, os.Remove(f)) }, VerdictTampered, false},
		{"posted, then edited above", func(t *testing.T, f string, b []byte) {
			mustAppend(t, f, turn("codex", "Posted.\n"))
			a := readFile(t, f)
			must(t, os.WriteFile(f, []byte(strings.Replace(string(a), "call it All", "call it Every", 1)), 0o644))
		}, VerdictTampered, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, before := oneTurn(t)
			dir := StateDir(file, "d")
			tc.write(t, file, before)
			var agents []byte
			if b, err := os.ReadFile(file); err == nil {
				agents = b
			}
			keep := KeepPath(dir, 2, "codex", 1)
			s, err := Settle(file, before, want2, keep)
			must(t, err)
			if s.Outcome != tc.outcome || s.Entry != nil {
				t.Fatalf("settled %+v, want %s", s, tc.outcome)
			}
			if got := readFile(t, file); !bytes.Equal(got, before) {
				t.Fatalf("file not restored byte for byte:\n%s", firstDiff(before, got))
			}
			if tc.kept {
				if s.Kept != keep {
					t.Errorf("kept at %q, want %q", s.Kept, keep)
				}
				if got := readFile(t, keep); !bytes.Equal(got, agents) {
					t.Error("the kept version is not what the agent left")
				}
			} else if s.Kept != "" {
				t.Errorf("kept %q though nothing differed", s.Kept)
			}
			if s.Progress.Seq != 1 || s.Progress.NextAgent != "codex" || s.Status != StatusOpen {
				t.Errorf("progress after restore %+v %s", s.Progress, s.Status)
			}
			mustVerify(t, file)
			mustAppend(t, file, turn("codex", "The retry.\n"))
			mustVerify(t, file)
		})
	}
	if got := KeepPath("/x/.walkie/d", 7, "codex", 2); got != "/x/.walkie/d/rejected/0007-codex-2.md" {
		t.Errorf("KeepPath = %s", got)
	}
}

// TestSettleChecksExpect: the controller cannot have a turn stamped that
// is not the record's next one.
func TestSettleChecksExpect(t *testing.T) {
	file, before := oneTurn(t)
	after := append(append([]byte(nil), before...), "\n## Turn 3 · claude\n\nA.\n"...)
	must(t, os.WriteFile(file, after, 0o644))
	if _, err := Settle(file, before, Expect{Turn: 3, Agent: "claude"}, ""); err == nil {
		t.Fatal("stamped turn 3 where turn 2 was next")
	}
	if !bytes.Equal(readFile(t, file), after) {
		t.Error("a refused settle changed the file")
	}
}

// Before the first entry, text under a wrong heading (or none) reads as
// part of the briefing to the parser; the judge must still call it
// malformed, not "no turn", since something was written.
func TestJudgeFirstTurnWithoutHeading(t *testing.T) {
	file := newDebate(t, 3, "claude", "codex")
	before := readFile(t, file)
	want := Expect{Turn: 1, Agent: "claude"}
	for name, added := range map[string]string{
		"dash heading": "\n## Turn 1 - claude\n\nI propose X.\n",
		"no heading":   "\nI propose X.\n",
	} {
		t.Run(name, func(t *testing.T) {
			v, _ := Judge(file, before, append(append([]byte(nil), before...), added...), want)
			if v.Outcome != VerdictMalformed || !strings.Contains(v.Detail, `without the heading "## Turn 1 · claude"`) {
				t.Errorf("verdict %+v, want malformed naming the heading", v)
			}
		})
	}
}

// forgeTurn appends to before a turn closed by a marker the agent wrote
// itself: as walkie would have stamped it (broken ""), with a made-up
// hash ("hash"), or chained from a hash that is not the one before it
// ("prev"), in the shape of the file's format, or a good marker of the
// other shape ("shape").
func forgeTurn(t *testing.T, before []byte, body, broken string) []byte {
	t.Helper()
	d, err := Parse("f", before)
	must(t, err)
	p := d.Progress()
	content := []byte("\n## Turn " + itoa(p.NextTurn) + " · " + p.NextAgent + "\n\n" + body)
	mk := Marker{Seq: p.Seq + 1, Turn: p.NextTurn, Agent: p.NextAgent, At: t0, Prev: p.Hash}
	if broken == "prev" {
		mk.Prev = GenesisHash([]byte("another record"))
	}
	format := d.Meta.Walkie
	if broken == "shape" { // the marker of the other shape, right for its own
		format = map[bool]int{true: FormatVersion, false: FormatCompact}[format >= FormatCompact]
	}
	line := stamp(content, &mk, format)
	if broken == "hash" {
		field := " hash=sha256:"
		if d.Meta.Walkie >= FormatCompact {
			field = " h="
		}
		i := bytes.Index(line, []byte(field)) + len(field)
		line[i] = map[bool]byte{true: 'B', false: 'A'}[line[i] == 'A']
	}
	return append(append(append([]byte(nil), before...), content...), line...)
}

// Issue 12.11: a marker the agent wrote is the turn's fault, named with
// its line, not an edit of the front matter or of an earlier entry.
func TestJudgeForgedMarker(t *testing.T) {
	first := newDebate(t, 3, "claude", "codex")
	firstBefore := readFile(t, first)
	second, secondBefore := oneTurn(t)
	for _, tc := range []struct {
		name   string
		file   string
		before []byte
		want   Expect
	}{
		{"first turn", first, firstBefore, Expect{Turn: 1, Agent: "claude"}},
		{"second turn", second, secondBefore, want2},
	} {
		for _, broken := range []string{"hash", "prev", "shape"} {
			t.Run(tc.name+"/"+broken, func(t *testing.T) {
				after := forgeTurn(t, tc.before, "A.\n", broken)
				v, _ := Judge(tc.file, tc.before, after, tc.want)
				line := lineOf(t, after[len(tc.before):], "<!-- walkie") + bytes.Count(tc.before, []byte("\n"))
				if v.Outcome != VerdictMalformed || v.Line != line || !strings.Contains(v.Detail, "a walkie marker that walkie did not write") ||
					strings.Contains(v.Detail, "front matter") {
					t.Errorf("verdict %+v; want malformed at line %d naming the forged marker", v, line)
				}
			})
		}
	}
}

// A marker forged with a valid hash verifies, so it cannot carry in what
// walkie post refuses: the judge applies the same text rules to it.
func TestJudgeStampedBodyRules(t *testing.T) {
	file, before := oneTurn(t)
	for body, want := range map[string]string{
		"A.\n\n   ## Turn 3 · claude\n": `renders as the heading "Turn 3 · claude"`,
		"A\x07.\n":                      "U+0007 (BEL)",
	} {
		v, _ := Judge(file, before, forgeTurn(t, before, body, ""), want2)
		if v.Outcome != VerdictMalformed || !strings.Contains(v.Detail, want) || v.Line == 0 {
			t.Errorf("body %q: verdict %+v, want malformed saying %q", body, v, want)
		}
	}
}

// Settle knows what walkie post recorded: a valid-looking marker that
// state.json never saw was forged, and the turn is undone.
func TestSettleForgedValidMarker(t *testing.T) {
	file, before := oneTurn(t)
	forged := forgeTurn(t, before, "Agreed.\n", "")
	must(t, os.WriteFile(file, forged, 0o644))
	keep := KeepPath(StateDir(file, "d"), 2, "codex", 1)
	s, err := Settle(file, before, want2, keep)
	must(t, err)
	if s.Outcome != VerdictMalformed || !strings.Contains(s.Detail, "walkie did not write") || s.Entry != nil {
		t.Fatalf("settled %+v, want malformed", s)
	}
	if !bytes.Equal(readFile(t, file), before) || !bytes.Equal(readFile(t, keep), forged) {
		t.Error("the file was not restored, or the forged version not kept")
	}
	mustVerify(t, file)
}
