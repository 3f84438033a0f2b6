package walkie

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the .golden files of the parse tests")

// docSummary is what the golden files pin of a parsed Doc: every field a
// caller reads, in a form a reviewer can diff.
type docSummary struct {
	Meta         metaSummary
	HeaderBytes  int
	BriefingLine int
	Briefing     string
	Entries      []entrySummary
	TailOffset   int64
	TailLine     int
	Tail         string
	Progress     Progress
	Verify       string // "ok", or the type of the error Verify returns
}

// metaSummary is the front matter keys of a debate; keys added for other
// modes do not change these goldens.
type metaSummary struct {
	Walkie         int
	ID             string
	Title          string
	Participants   []string
	MaxRounds      int
	MaxTurnBytes   int
	BriefingSHA256 string
}

type entrySummary struct {
	Kind     Kind
	Turn     int
	Agent    string
	SignedBy string
	Signed   bool
	Line     int
	MarkLine int
	Offset   int64
	Body     string
	Marker   Marker
}

func summarize(d *Doc) docSummary {
	m := d.Meta
	s := docSummary{Meta: metaSummary{m.Walkie, m.ID, m.Title, m.Participants, m.MaxRounds, m.MaxTurnBytes, m.BriefingSHA256}, HeaderBytes: len(d.Header), BriefingLine: d.BriefingLine, Briefing: string(d.Briefing),
		TailOffset: d.TailOffset, TailLine: d.TailLine, Tail: string(d.Tail), Progress: d.Progress(), Verify: "ok"}
	for _, e := range d.Entries {
		s.Entries = append(s.Entries, entrySummary{Kind: e.Kind, Turn: e.Turn, Agent: e.Agent, SignedBy: e.SignedBy, Signed: e.Signed(),
			Line: e.Line, MarkLine: e.MarkLine, Offset: e.Offset, Body: string(e.Body), Marker: e.Marker})
	}
	var torn *TornTailError
	switch err := d.Verify(); {
	case err == nil:
	case errors.As(err, &torn):
		s.Verify = "torn-tail"
	default:
		s.Verify = err.Error()
	}
	return s
}

// TestGolden parses every valid file under testdata/golden, compares what
// it found with the .golden summary beside it, and checks that rendering
// gives back the input byte for byte.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.walkie.md")
	must(t, err)
	if len(files) < 6 {
		t.Fatalf("only %d golden inputs", len(files))
	}
	wantVerify := map[string]string{"unstamped-tail.walkie.md": "torn-tail"}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in := readFile(t, f)
			d, err := Parse(f, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Render(); !bytes.Equal(got, in) {
				t.Fatalf("render differs from the input:\n%s", firstDiff(in, got))
			}
			s := summarize(d)
			want := wantVerify[filepath.Base(f)]
			if want == "" {
				want = "ok"
			}
			if s.Verify != want {
				t.Errorf("verify: %s, want %s", s.Verify, want)
			}
			got, err := json.MarshalIndent(s, "", "  ")
			must(t, err)
			got = append(got, '\n')
			golden := strings.TrimSuffix(f, ".walkie.md") + ".golden"
			if *update {
				must(t, os.WriteFile(golden, got, 0o644))
				return
			}
			wantJSON, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update)", err)
			}
			if !bytes.Equal(got, wantJSON) {
				t.Errorf("parse differs from %s:\n%s", golden, firstDiff(wantJSON, got))
			}
		})
	}
}

func firstDiff(want, got []byte) string {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g || i >= len(wl) || i >= len(gl) {
			return "line " + itoa(i+1) + ":\n want " + w + "\n got  " + g
		}
	}
	return "(same lines; lengths differ)"
}

// TestGoldenProgress pins the turn-order and sign-off reading of the
// golden files, which the JSON summary also holds, in words.
func TestGoldenProgress(t *testing.T) {
	for _, tc := range []struct {
		file      string
		turns     int
		seq       int
		next      string
		signed    []string
		converged bool
	}{
		{"no-entries", 0, 0, "claude", nil, false},
		{"turns", 3, 3, "codex", nil, false},
		{"supervisor", 3, 5, "claude", nil, false},
		{"signed", 4, 4, "claude", []string{"claude", "codex"}, true},
		{"no-final-newline", 4, 4, "claude", []string{"claude", "codex"}, true},
		{"unstamped-tail", 1, 1, "codex", nil, false},
	} {
		f := "testdata/golden/" + tc.file + ".walkie.md"
		d, err := Parse(f, readFile(t, f))
		must(t, err)
		p := d.Progress()
		if p.Turns != tc.turns || p.Seq != tc.seq || p.NextAgent != tc.next || p.Converged != tc.converged || strings.Join(p.Signed, ",") != strings.Join(tc.signed, ",") {
			t.Errorf("%s: progress %+v, want turns %d seq %d next %s signed %v converged %v", tc.file, p, tc.turns, tc.seq, tc.next, tc.signed, tc.converged)
		}
	}
}

// goodHeader is a valid front matter and briefing to build bad inputs from.
const goodHeader = "---\nwalkie: 1\nid: t\nparticipants: [claude, codex]\nmax_rounds: 3\n---\n# Briefing\n\nText.\n"

// TestParseBadInput gives every class of bad input and checks that the
// error names the file and the line and says what to do.
func TestParseBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		line int
		want string // in the message
	}{
		{"empty file", "", 1, "missing front matter"},
		{"no front matter", "# Briefing\n\nText.\n", 1, "missing front matter"},
		{"front matter not closed", "---\nwalkie: 1\nid: t\n# Briefing\n", 1, "not closed"},
		{"broken yaml", "---\nwalkie: 1\nid: [t\nparticipants: [a, b]\n---\n# Briefing\n", 0, "not valid YAML"},
		{"yaml not a mapping", "---\n- a\n- b\n---\n# Briefing\n", 2, "not a YAML mapping"},
		{"unknown key", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\nmax_rounds: 3\ncolour: blue\n---\n# Briefing\n", 6, `unknown front matter key "colour"`},
		{"duplicate key", "---\nwalkie: 1\nid: t\nid: u\nparticipants: [a, b]\nmax_rounds: 3\n---\n# Briefing\n", 4, "appears twice"},
		{"wrong version", "---\nwalkie: 5\nid: t\nparticipants: [a, b]\nmax_rounds: 3\n---\n# Briefing\n", 2, "not a format"},
		{"phases in format 1", rtHeader(1, "phases:\n  - research: gemini\n"), 10, "phases need format 2, and this file says walkie: 1"},
		{"phases in a debate", "---\nwalkie: 2\nid: t\nparticipants: [a, b]\nmax_rounds: 3\nphases: [{plan: a}]\n---\n# Briefing\n", 6, "phases is a round-table key"},
		{"phases not a list", rtHeader(2, "phases: {research: gemini}\n"), 10, "phases is not a list"},
		{"phase of two pairs", rtHeader(2, "phases:\n  - research: gemini\n  - {plan: claude, research: codex}\n"), 12, "phase 2 is not one KIND: AGENT pair"},
		{"phase a bare name", rtHeader(2, "phases:\n  - research\n"), 11, "phase 1 is not one KIND: AGENT pair"},
		{"phase kind unknown", rtHeader(2, "phases:\n  - research: gemini\n  - design: claude\n"), 12, `phase "design" is not a kind walkie knows`},
		{"phase agent invalid", rtHeader(2, "phases:\n  - plan: \"cla ude\"\n"), 11, `the plan phase's agent "cla ude" is not a valid name`},
		{"phase agent a list", rtHeader(2, "phases:\n  - plan: [claude]\n"), 11, "not one KIND: AGENT pair"},
		{"phase twice", rtHeader(2, "phases:\n  - research: gemini\n  - research: codex\n"), 12, "the research phase is listed twice"},
		{"phases out of order", rtHeader(2, "phases:\n  - plan: claude\n  - research: gemini\n"), 12, "the research phase comes after the plan phase"},
		{"bad value", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\nmax_rounds: many\n---\n# Briefing\n", 5, `bad value for "max_rounds"`},
		{"missing id", "---\nwalkie: 1\nparticipants: [a, b]\nmax_rounds: 3\n---\n# Briefing\n", 2, "id"},
		{"one participant", "---\nwalkie: 1\nid: t\nparticipants: [claude]\nmax_rounds: 3\n---\n# Briefing\n", 4, "at least two participants"},
		{"no participants", "---\nwalkie: 1\nid: t\nmax_rounds: 3\n---\n# Briefing\n", 2, "at least two participants"},
		{"duplicate participant", "---\nwalkie: 1\nid: t\nparticipants: [claude, codex, claude]\nmax_rounds: 3\n---\n# Briefing\n", 4, `"claude" is listed twice`},
		{"participant named supervisor", "---\nwalkie: 1\nid: t\nparticipants: [claude, supervisor]\nmax_rounds: 3\n---\n# Briefing\n", 4, "not a valid name"},
		{"participant with a space", "---\nwalkie: 1\nid: t\nparticipants: [claude, \"co dex\"]\nmax_rounds: 3\n---\n# Briefing\n", 4, "not a valid name"},
		{"person not a participant", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\npeople: [c]\nmax_rounds: 3\n---\n# Briefing\n", 5, `"c" is in people: but not a participant`},
		{"person twice", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\npeople: [a, a]\nmax_rounds: 3\n---\n# Briefing\n", 5, `"a" is listed twice in people:`},
		{"person in a round table", rtHeader(1, "people: [b]\n"), 10, "never people"},
		{"supervisor a participant", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\nsupervisor: b\nmax_rounds: 3\n---\n# Briefing\n", 5, "b is a participant and cannot also supervise"},
		{"supervisor the role", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\nsupervisor: supervisor\nmax_rounds: 3\n---\n# Briefing\n", 5, `supervisor "supervisor" is not a valid name`},
		{"zero rounds", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\nmax_rounds: 0\n---\n# Briefing\n", 5, "max_rounds"},
		{"bad briefing hash", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\nmax_rounds: 3\nbriefing_sha256: abc\n---\n# Briefing\n", 6, "briefing_sha256"},
		{"no briefing", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\nmax_rounds: 3\n---\n", 7, "no `# Briefing`"},
		{"text before the briefing", "---\nwalkie: 1\nid: t\nparticipants: [a, b]\nmax_rounds: 3\n---\n\nHello\n# Briefing\n", 8, "expected \"# Briefing\""},
		{"not utf-8", goodHeader + "\n## Turn 1 · claude\n\nna\xefve\n", 13, "not UTF-8"},
		{"not utf-8 in front matter", "---\nwalkie: 1\nid: t\xff\n", 3, "not UTF-8"},
		{"text between entries", goodHeader + entryText(t, 1, "claude") + "stray words\n" + "\n## Turn 2 · codex\n\nx\n<!-- walkie seq=2 turn=2 agent=codex at=2026-11-30T02:00:00.000Z prev=sha256:00 hash=sha256:00 -->\n", 15, "expected an entry heading"},
		{"heading without marker", goodHeader + "\n## Turn 1 · claude\n\nx\n\n## Turn 2 · codex\n\ny\n<!-- walkie seq=1 turn=1 agent=claude at=2026-11-30T02:00:00.000Z prev=sha256:00 hash=sha256:00 -->\n", 11, "no marker line"},
		{"bad marker field", goodHeader + "\n## Turn 1 · claude\n\nx\n<!-- walkie seq=1 turn=1 agent=claude at=yesterday prev=sha256:00 hash=sha256:00 -->\n", 14, "bad marker line"},
		{"marker missing a field", goodHeader + "\n## Turn 1 · claude\n\nx\n<!-- walkie seq=1 turn=1 agent=claude prev=sha256:00 hash=sha256:00 -->\n", 14, "missing at="},
		{"marker before any heading", goodHeader + "<!-- walkie seq=1 agent=claude at=2026-11-30T02:00:00.000Z prev=sha256:00 hash=sha256:00 -->\n", 10, "expected an entry heading"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const file = "dir/bad.walkie.md"
			d, err := Parse(file, []byte(tc.data))
			if err == nil {
				t.Fatalf("parsed: %+v", d.Meta)
			}
			asInput(t, err, file, tc.line)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("message %q does not say %q", err, tc.want)
			}
		})
	}
}

// rtHeader is a round table's header in format version, with extra front
// matter lines from line 10 on.
func rtHeader(version int, extra string) string {
	return "---\nwalkie: " + itoa(version) + "\nid: t\nmode: roundtable\nimplementer: a\nreviewers: [b]\ngrader: [\"true\"]\nworkspace: w\nmax_rounds: 3\n" + extra + "---\n# Briefing\n\nText.\n"
}

// Phases round-trip through the canonical front matter, in their order.
func TestPhasesRoundTrip(t *testing.T) {
	d, err := Parse("p.walkie.md", []byte(rtHeader(2, "phases:\n  - research: gemini\n  - plan: claude\n")))
	if err != nil {
		t.Fatal(err)
	}
	want := []Phase{{Kind: PhaseResearch, Agent: "gemini"}, {Kind: PhasePlan, Agent: "claude"}}
	if len(d.Meta.Phases) != 2 || d.Meta.Phases[0].Kind != want[0].Kind || d.Meta.Phases[1].Agent != want[1].Agent {
		t.Fatalf("phases %+v", d.Meta.Phases)
	}
	out := string(renderMeta(d.Meta))
	if !strings.Contains(out, "phases:\n  - {research: gemini}\n  - {plan: claude}\n") || !strings.Contains(out, "walkie: 2\n") {
		t.Fatalf("rendered:\n%s", out)
	}
	again, err := Parse("p.walkie.md", append([]byte(out), "# Briefing\n\nText.\n"...))
	if err != nil || len(again.Meta.Phases) != 2 || again.Meta.Phases[1].Kind != PhasePlan {
		t.Fatalf("%v %+v", err, again)
	}
	// Format 2 without phases reads too; `phases: []` is none.
	if _, err := Parse("p.walkie.md", []byte(rtHeader(2, "phases: []\n"))); err != nil {
		t.Fatal(err)
	}
}

// entryText is a correctly stamped first turn by agent on goodHeader.
func entryText(t *testing.T, turnNo int, agent string) string {
	content := "\n## Turn " + itoa(turnNo) + " · " + agent + "\n\nx\n"
	mk := Marker{Seq: turnNo, Turn: turnNo, Agent: agent, At: t0, Prev: GenesisHash([]byte(goodHeader))}
	return content + string(stamp([]byte(content), &mk, FormatVersion))
}

// TestParseLineNumbers checks that parse reports each entry's heading and
// marker line, counted from the top of the file.
func TestParseLineNumbers(t *testing.T) {
	data := readFile(t, "testdata/golden/supervisor.walkie.md")
	d, err := Parse("s.walkie.md", data)
	must(t, err)
	for _, e := range d.Entries {
		head := "## Supervisor"
		if e.Kind == KindTurn {
			head = "## Turn " + itoa(e.Turn) + " · " + e.Agent
		}
		lines := strings.Split(string(data), "\n")
		if lines[e.Line-1] != head {
			t.Errorf("entry %d: line %d is %q, want %q", e.Marker.Seq, e.Line, lines[e.Line-1], head)
		}
		if !strings.HasPrefix(lines[e.MarkLine-1], "<!-- walkie seq="+itoa(e.Marker.Seq)+" ") {
			t.Errorf("entry %d: marker line %d is %q", e.Marker.Seq, e.MarkLine, lines[e.MarkLine-1])
		}
	}
}

// TestSplitSignOff pins which closing lines count as a sign-off, and
// what is left of the body without one.
func TestSplitSignOff(t *testing.T) {
	for _, c := range []struct{ body, text, name string }{
		{"x\nSigned-off-by: codex\n", "x\n", "codex"},
		{"x\n\nSigned-off-by: codex\n\n\n", "x\n\n", "codex"},
		{"x\r\nSigned-off-by: codex  \r\n", "x\r\n", "codex"},
		{"x\nSigned-off-by:codex", "x\n", "codex"},
		{"Signed-off-by: codex\n", "", "codex"},
		{"Signed-off-by: codex\nmore\n", "Signed-off-by: codex\nmore\n", ""},
		{"x\nsigned-off-by: codex\n", "x\nsigned-off-by: codex\n", ""},
		{"x\nSigned-off-by: codex extra\n", "x\nSigned-off-by: codex extra\n", ""},
		{"x\n  Signed-off-by: codex\n", "x\n  Signed-off-by: codex\n", ""},
		{"", "", ""},
	} {
		if text, name := SplitSignOff([]byte(c.body)); string(text) != c.text || name != c.name {
			t.Errorf("SplitSignOff(%q) = %q, %q; want %q, %q", c.body, text, name, c.text, c.name)
		}
	}
}
