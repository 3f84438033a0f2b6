package walkie

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// forged is an entry written with a valid chain but arbitrary content: a
// buggy or hostile writer. Verify must catch what the chain cannot.
type forged struct {
	super     bool
	turn      int    // heading's turn number
	agent     string // heading's author
	markTurn  int
	markAgent string
	seq       int
	signedBy  string
}

func forge(header string, es ...forged) []byte {
	b := []byte(header)
	prev := GenesisHash(b)
	for _, f := range es {
		var content string
		if f.super {
			content = "\n## Supervisor\n\nnote\n"
		} else {
			content = "\n## Turn " + itoa(f.turn) + " · " + f.agent + "\n\ntext\n"
		}
		if f.signedBy != "" {
			content += "Signed-off-by: " + f.signedBy + "\n"
		}
		mk := Marker{Seq: f.seq, Turn: f.markTurn, Agent: f.markAgent, At: t0, Prev: prev}
		b = append(b, content...)
		b = append(b, stamp([]byte(content), &mk, FormatVersion)...)
		prev = mk.Hash
	}
	return b
}

func ft(seq, turn int, agent string) forged {
	return forged{turn: turn, agent: agent, markTurn: turn, markAgent: agent, seq: seq}
}

// threeTurns is a real record of three turns and a supervisor entry.
func threeTurns(t *testing.T, format int) (string, []byte) {
	file := atFormat(t, newDebate(t, 6, "claude", "codex"), format)
	mustAppend(t, file, turn("claude", "First proposal.\n"), turn("codex", "Second thoughts.\n"), supervisorNote("Stay on topic.\n"), turn("claude", "Third.\n"))
	return file, readFile(t, file)
}

// TestVerifyFindsTampering changes a recorded file in every way the chain
// must catch and checks that Verify names the first bad entry and the
// line of its heading.
func TestVerifyFindsTampering(t *testing.T) {
	for _, format := range []int{FormatVersion, FormatTyped, FormatCompact} {
		t.Run("format "+itoa(format), func(t *testing.T) { verifyFindsTampering(t, format) })
	}
}

func verifyFindsTampering(t *testing.T, format int) {
	file, good := threeTurns(t, format)
	d, err := Parse(file, good)
	must(t, err)
	if err := d.Verify(); err != nil {
		t.Fatalf("untouched record: %v", err)
	}
	raw := func(i int) string { return string(d.Entries[i].Raw) }
	hdr := string(d.Header)
	for _, tc := range []struct {
		name string
		data string
		seq  int
		line int
		want string
	}{
		{"body edited", strings.Replace(string(good), "Second thoughts.", "Second thought.", 1), 2, d.Entries[1].Line, "changed after it was recorded"},
		{"one byte added", strings.Replace(string(good), "Third.\n", "Third.!\n", 1), 4, d.Entries[3].Line, "changed after it was recorded"},
		{"heading author edited", strings.Replace(string(good), "## Turn 2 · codex", "## Turn 2 · claude", 1), 2, d.Entries[1].Line, "changed"},
		{"marker time edited", strings.Replace(string(good), "at="+markerTime(d.Entries[0].Marker.At, format), "at="+markerTime(t0, format), 1), 1, d.Entries[0].Line, "changed"},
		{"front matter edited", strings.Replace(string(good), "max_rounds: 6", "max_rounds: 9", 1), 1, d.Entries[0].Line, "front matter or briefing"},
		{"unapproved briefing edited", strings.Replace(string(good), "Pick a name", "Pick two names", 1), 1, d.Entries[0].Line, "front matter or briefing"},
		{"entries swapped", hdr + raw(0) + raw(2) + raw(1) + raw(3), 2, d.Entries[1].Line, "seq=3 where 2 was expected"},
		{"entry removed", hdr + raw(0) + raw(2) + raw(3), 2, d.Entries[1].Line, "seq=3 where 2 was expected"},
		{"entry duplicated", hdr + raw(0) + raw(1) + raw(1) + raw(2) + raw(3), 3, d.Entries[1].Line + strings.Count(raw(1), "\n"), "seq=2 where 3 was expected"},
		{"first entry removed", hdr + raw(1) + raw(2) + raw(3), 1, d.Entries[1].Line - strings.Count(raw(0), "\n"), "seq=2 where 1 was expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse(file, []byte(tc.data))
			must(t, err)
			err = d.Verify()
			ce := asChain(t, err, tc.seq, tc.line)
			if !strings.Contains(ce.Error(), tc.want) {
				t.Errorf("%v does not say %q", ce, tc.want)
			}
			if !strings.HasPrefix(ce.Error(), file+":"+itoa(tc.line)+": entry "+itoa(tc.seq)) {
				t.Errorf("message %q does not start with file:line: entry", ce)
			}
		})
	}
}

// markerTime is t as a marker of the format writes it.
func markerTime(t time.Time, format int) string {
	if format >= FormatCompact {
		return t.UTC().Format(compactTimeFormat)
	}
	return t.UTC().Format(TimeFormat)
}

// TestVerifyTruncation: a cut through the last entry leaves a torn tail;
// whole entries cut from the end leave a valid chain, which only the state
// record's last_seq and last_hash expose.
func TestVerifyTruncation(t *testing.T) {
	for _, format := range []int{FormatVersion, FormatCompact} {
		t.Run("format "+itoa(format), func(t *testing.T) { verifyTruncation(t, format) })
	}
}

func verifyTruncation(t *testing.T, format int) {
	file, good := threeTurns(t, format)
	d, err := Parse(file, good)
	must(t, err)
	st, err := LoadState(StateDir(file, "d"))
	must(t, err)
	if st.LastSeq != 4 || st.LastHash != d.LastHash() {
		t.Fatalf("state after four entries: last_seq %d last_hash %s, want 4 %s", st.LastSeq, st.LastHash, d.LastHash())
	}

	// Cut inside the last marker: a torn tail at the last entry's heading.
	cut := good[:len(good)-20]
	dc, err := Parse(file, cut)
	must(t, err)
	var torn *TornTailError
	if err := dc.Verify(); !errors.As(err, &torn) {
		t.Fatalf("cut inside the last entry: %v, want a torn tail", err)
	} else if torn.Line != d.Entries[3].Line || torn.File != file {
		t.Errorf("torn tail at %s:%d, want line %d", torn.File, torn.Line, d.Entries[3].Line)
	}

	for drop := 1; drop <= 4; drop++ {
		end := d.Entries[len(d.Entries)-drop].Offset
		dt, err := Parse(file, good[:end])
		must(t, err)
		if err := dt.Verify(); err != nil {
			t.Fatalf("%d entries cut: the chain alone should hold, got %v", drop, err)
		}
		err = CheckAgainstState(file, dt.Progress(), st)
		ce := asChain(t, err, 4-drop+1, 0)
		if !strings.Contains(ce.Error(), "truncated") {
			t.Errorf("%d entries cut: %v does not say truncated", drop, ce)
		}
	}

	// The last entry replaced by another validly stamped one.
	dd, err := Parse(file, good[:d.Entries[3].Offset])
	must(t, err)
	content := []byte("\n## Turn 3 · claude\n\nSomething else.\n")
	mk := Marker{Seq: 4, Turn: 3, Agent: "claude", At: t0, Prev: dd.LastHash()}
	replaced := append(append(append([]byte(nil), good[:d.Entries[3].Offset]...), content...), stamp(content, &mk, dd.Meta.Walkie)...)
	dr, err := Parse(file, replaced)
	must(t, err)
	if err := dr.Verify(); err != nil {
		t.Fatalf("replaced last entry: chain should hold, got %v", err)
	}
	ce := asChain(t, CheckAgainstState(file, dr.Progress(), st), 4, 0)
	if !strings.Contains(ce.Error(), "replaced") {
		t.Errorf("%v does not say replaced", ce)
	}
	if err := CheckAgainstState(file, d.Progress(), st); err != nil {
		t.Errorf("the record as written: %v", err)
	}
}

// TestVerifyTurnRules: entries with a valid chain that break turn order,
// authorship or sequence numbering.
func TestVerifyTurnRules(t *testing.T) {
	const hdr = goodHeader
	sup := forged{super: true, agent: SupervisorName, markAgent: SupervisorName}
	wrongMark := ft(2, 2, "codex")
	wrongMark.markAgent = "claude"
	supTurn := sup
	supTurn.seq, supTurn.markTurn = 2, 2
	for _, tc := range []struct {
		name string
		data []byte
		seq  int
		want string
	}{
		{"wrong author", forge(hdr, ft(1, 1, "claude"), ft(2, 2, "claude")), 2, `written by "claude" but it was "codex"'s turn`},
		{"unknown author", forge(hdr, ft(1, 1, "claude"), ft(2, 2, "gemini")), 2, `"gemini"`},
		{"first turn by the second participant", forge(hdr, ft(1, 1, "codex")), 1, `it was "claude"'s turn`},
		{"turn skipped", forge(hdr, ft(1, 1, "claude"), ft(2, 3, "claude")), 2, "turn 3 where turn 2 was expected"},
		{"turn repeated", forge(hdr, ft(1, 1, "claude"), ft(2, 1, "claude")), 2, "turn 1 where turn 2 was expected"},
		{"sequence skipped", forge(hdr, ft(1, 1, "claude"), ft(3, 2, "codex")), 2, "seq=3 where 2 was expected"},
		{"marker author differs from heading", forge(hdr, ft(1, 1, "claude"), wrongMark), 2, `heading names "codex" but the marker recorded "claude"`},
		{"supervisor entry with a turn", forge(hdr, ft(1, 1, "claude"), supTurn), 2, "supervisor entry carries a turn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse("f.walkie.md", tc.data)
			must(t, err)
			if !bytes.Equal(d.Render(), tc.data) {
				t.Fatal("render differs")
			}
			ce := asChain(t, d.Verify(), tc.seq, d.Entries[tc.seq-1].Line)
			if !strings.Contains(ce.Error(), tc.want) {
				t.Errorf("%v does not say %q", ce, tc.want)
			}
		})
	}
	// The same shapes, stamped correctly, verify: the checks above are
	// about the rules, not the forging.
	ok := forge(hdr, ft(1, 1, "claude"), forged{super: true, agent: SupervisorName, markAgent: SupervisorName, seq: 2}, ft(3, 2, "codex"), ft(4, 3, "claude"))
	d, err := Parse("f.walkie.md", ok)
	must(t, err)
	if err := d.Verify(); err != nil {
		t.Fatalf("a valid forged record: %v", err)
	}
}

// TestVerifyBriefingPinned: once approved, the briefing's hash is checked
// before anything else, and the error points at the briefing.
func TestVerifyBriefingPinned(t *testing.T) {
	const f = "testdata/golden/turns.walkie.md"
	good := readFile(t, f)
	for _, tc := range []struct{ name, from, to string }{
		{"briefing edited", "Decided already: Go 1.26", "Decided already: Go 1.25"},
		{"briefing extended", "A sign-off means", "Also: no reflection.\nA sign-off means"},
		{"pinned hash edited", "briefing_sha256: ", "briefing_sha256: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(strings.Replace(string(good), tc.from, tc.to, 1))
			if tc.name == "pinned hash edited" {
				d, err := Parse(f, good)
				must(t, err)
				data = []byte(strings.Replace(string(good), d.Meta.BriefingSHA256, strings.Repeat("0", 64), 1))
			}
			d, err := Parse(f, data)
			must(t, err)
			err = d.Verify()
			ie := asInput(t, err, f, lineOf(t, data, "# Briefing\n"))
			if !strings.Contains(ie.Msg, "briefing changed after it was approved") {
				t.Errorf("message: %v", ie)
			}
		})
	}
	// Blank lines around the briefing are not part of what is pinned.
	data := []byte(strings.Replace(string(good), "# Briefing\n\n", "# Briefing\n\n\n\n", 1))
	d, err := Parse(f, data)
	must(t, err)
	var ce *ChainError
	if err := d.Verify(); !errors.As(err, &ce) || ce.Seq != 1 {
		t.Errorf("blank lines added to the approved briefing: %v, want the chain to catch the header change at entry 1", err)
	}
}

// TestVerifyOnDiskUnchanged: verify, status and the controller's checks
// read only; a bad record stays exactly as it was.
func TestVerifyOnDiskUnchanged(t *testing.T) {
	file, good := threeTurns(t, FormatCompact)
	bad := strings.Replace(string(good), "Second thoughts.", "Second thought.", 1)
	must(t, os.WriteFile(file, []byte(bad), 0o644))
	before := snapshotTree(t, filepath.Dir(file))
	d, err := Load(file)
	must(t, err)
	if err := d.Verify(); err == nil {
		t.Fatal("edited record verified")
	}
	if diff := before.diff(snapshotTree(t, filepath.Dir(file))); diff != "" {
		t.Errorf("verify changed the disk: %s", diff)
	}
}
