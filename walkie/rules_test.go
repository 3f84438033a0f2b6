package walkie

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTurnOrderAndRounds(t *testing.T) {
	two := Meta{Participants: []string{"claude", "codex"}}
	three := Meta{Participants: []string{"claude", "codex", "gemini"}}
	for _, tc := range []struct {
		m     Meta
		turn  int
		agent string
		round int
	}{
		{two, 1, "claude", 1}, {two, 2, "codex", 1}, {two, 3, "claude", 2}, {two, 4, "codex", 2}, {two, 11, "claude", 6},
		{three, 1, "claude", 1}, {three, 2, "codex", 1}, {three, 3, "gemini", 1}, {three, 4, "claude", 2},
		{three, 6, "gemini", 2}, {three, 7, "claude", 3}, {three, 300, "gemini", 100},
	} {
		if got := tc.m.TurnAgent(tc.turn); got != tc.agent {
			t.Errorf("%v turn %d: %s, want %s", tc.m.Participants, tc.turn, got, tc.agent)
		}
		if got := tc.m.RoundOf(tc.turn); got != tc.round {
			t.Errorf("%v turn %d: round %d, want %d", tc.m.Participants, tc.turn, got, tc.round)
		}
	}
}

// pattern forges a record from a string, one character per entry: 'S' a
// signed turn, '.' an unsigned one, 'n' a supervisor note, 'x' a turn
// closed with the sign-off of the participant after its author.
func pattern(participants []string, p string) []byte {
	hdr := "---\nwalkie: 1\nid: t\nparticipants: [" + strings.Join(participants, ", ") + "]\nmax_rounds: 9\n---\n# Briefing\n\nText.\n"
	m := Meta{Participants: participants}
	var es []forged
	turnNo := 0
	for i, c := range p {
		if c == 'n' {
			es = append(es, forged{super: true, agent: SupervisorName, markAgent: SupervisorName, seq: i + 1})
			continue
		}
		turnNo++
		e := ft(i+1, turnNo, m.TurnAgent(turnNo))
		switch c {
		case 'S':
			e.signedBy = e.agent
		case 'x':
			e.signedBy = m.TurnAgent(turnNo + 1)
		}
		es = append(es, e)
	}
	return forge(hdr, es...)
}

// TestConvergence pins the sign-off rule: a sign-off counts only in its
// author's own turn, a later unsigned turn voids it, and the debate has
// converged when every participant has signed after the last unsigned turn.
func TestConvergence(t *testing.T) {
	two := []string{"claude", "codex"}
	three := []string{"claude", "codex", "gemini"}
	for _, tc := range []struct {
		parts     []string
		pattern   string
		signed    string
		converged bool
		next      string
		round     int
	}{
		{two, "", "", false, "claude", 1},
		{two, "S", "claude", false, "codex", 1},
		{two, "SS", "claude,codex", true, "claude", 2},
		{two, ".SS", "codex,claude", true, "codex", 2},
		{two, "S.", "", false, "claude", 2},
		{two, "S.S", "claude", false, "codex", 2},
		{two, "S.SS", "claude,codex", true, "claude", 3},
		{two, "SnS", "claude,codex", true, "claude", 2}, // a note takes no turn and voids nothing
		{two, "nnS", "claude", false, "codex", 1},       // notes before the first turn
		{two, "Sx", "", false, "claude", 2},             // codex's turn carries claude's sign-off: counts for nobody
		{two, "xS", "codex", false, "claude", 2},        // claude's turn signed by codex is unsigned
		{three, "SS", "claude,codex", false, "gemini", 1},
		{three, "SSS", "claude,codex,gemini", true, "claude", 2},
		{three, "S.SS", "gemini,claude", false, "codex", 2},
		{three, "S.SSS", "gemini,claude,codex", true, "gemini", 2},
		{three, "SS.SS", "claude,codex", false, "gemini", 2},
		{three, "SSnS", "claude,codex,gemini", true, "claude", 2},
		{three, "SS.", "", false, "claude", 2},
	} {
		name := strings.Join(tc.parts, ",") + "/" + tc.pattern
		d, err := Parse("f.walkie.md", pattern(tc.parts, tc.pattern))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := d.Verify(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p := d.Progress()
		if got := strings.Join(p.Signed, ","); got != tc.signed || p.Converged != tc.converged || p.NextAgent != tc.next || p.NextRound != tc.round {
			t.Errorf("%s: signed %q converged %v next %s round %d; want %q %v %s %d", name, got, p.Converged, p.NextAgent, p.NextRound, tc.signed, tc.converged, tc.next, tc.round)
		}
		if p.Seq != len(tc.pattern) {
			t.Errorf("%s: seq %d, want %d", name, p.Seq, len(tc.pattern))
		}
	}
}

// TestConvergenceThroughAppend plays the rule through the enforced
// writer, whose tail reading must agree with a whole parse at every step.
func TestConvergenceThroughAppend(t *testing.T) {
	file := newDebate(t, 9, "claude", "codex", "gemini")
	steps := []struct {
		p      Post
		status string
		signed string
	}{
		{signed("claude", "Proposal A.\n"), StatusOpen, "claude"},
		{turn("codex", "Not A; B.\n"), StatusOpen, ""},
		{signed("gemini", "B.\n"), StatusOpen, "gemini"},
		{supervisorNote("B looks right to me.\n"), StatusOpen, "gemini"},
		{Post{From: "claude", Body: []byte("B, then.\nSigned-off-by: claude\n")}, StatusOpen, "gemini,claude"},
		{signed("codex", "B.\n"), StatusConverged, "gemini,claude,codex"},
	}
	for i, s := range steps {
		rc := mustAppend(t, file, s.p)
		d := mustVerify(t, file)
		whole := d.Progress()
		if rc.Status != s.status || strings.Join(rc.Progress.Signed, ",") != s.signed {
			t.Errorf("step %d: status %s signed %v; want %s %s", i+1, rc.Status, rc.Progress.Signed, s.status, s.signed)
		}
		if rc.Progress.Converged != whole.Converged || rc.Progress.NextAgent != whole.NextAgent || rc.Progress.Seq != whole.Seq ||
			rc.Progress.Hash != whole.Hash || strings.Join(rc.Progress.Signed, ",") != strings.Join(whole.Signed, ",") {
			t.Errorf("step %d: the writer's progress %+v differs from a whole parse %+v", i+1, rc.Progress, whole)
		}
	}
}

func TestDebateStatus(t *testing.T) {
	m := &Meta{Participants: []string{"a", "b"}, MaxRounds: 2}
	open := Progress{NextTurn: 4, NextRound: 2}
	capped := Progress{NextTurn: 5, NextRound: 3}
	for _, tc := range []struct {
		p    Progress
		s    State
		want string
	}{
		{open, State{}, StatusOpen},
		{capped, State{}, StatusMaxRounds},
		{capped, State{ExtraRounds: 1}, StatusOpen},
		{open, State{Status: StatusHalted}, StatusHalted},
		{capped, State{Status: StatusHalted}, StatusHalted},
		{Progress{NextRound: 3, Converged: true}, State{Status: StatusHalted}, StatusConverged},
		{open, State{Status: StatusFailed}, StatusFailed},
	} {
		if got := DebateStatus(m, tc.p, &tc.s); got != tc.want {
			t.Errorf("%+v %+v: %s, want %s", tc.p, tc.s, got, tc.want)
		}
	}
	if got := RoundCap(m, &State{ExtraRounds: 3}); got != 5 {
		t.Errorf("round cap %d, want 5", got)
	}
}

// A round table has no sign-offs: an implementer's Signed-off-by line is
// accepted as text but its turn is not signed, counts for nothing, and
// walkie post --sign is refused there.
func TestRoundtableHasNoSignOffs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rt.walkie.md")
	must(t, os.WriteFile(file, []byte("---\nwalkie: 1\nid: rt\nmode: roundtable\nimplementer: ada\nreviewers: [brook]\ngrader: [\"true\"]\nworkspace: w\nmax_rounds: 2\n---\n# Briefing\nb\n"), 0o644))
	before := readFile(t, file)
	after := append(append([]byte{}, before...), "\n## Turn 1 · ada\nDone.\nSigned-off-by: ada\n"...)
	v, d := Judge(file, before, after, Expect{Turn: 1, Agent: "ada"})
	if v.Outcome != VerdictAccepted || v.Signed {
		t.Fatalf("verdict %+v: want accepted, not signed", v)
	}
	if p := d.Progress(); len(p.Signed) != 0 || p.Converged {
		t.Fatalf("progress %+v", p)
	}
	asRefused(t, appendErr(file, signed("ada", "Done.")), "no sign-offs")
	asRefused(t, appendErr(file, turn("ada", "Done.\nSigned-off-by: ada")), "no sign-offs")
	mustAppend(t, file, turn("ada", "Done."), turn("brook", "Fine."))
	if d := mustVerify(t, file); d.Progress().Converged || len(d.Progress().Signed) != 0 {
		t.Fatalf("a round table converged by sign-offs: %+v", d.Progress())
	}
}

func appendErr(file string, p Post) error { _, err := Append(file, p); return err }
