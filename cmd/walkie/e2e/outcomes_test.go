package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
)

// Two agents disagree for a round, then both sign: converged, exit 0.
func TestConverge(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 3, scripts: map[string]string{
		"a": "sign_from: 2\nusage: true\ncost_usd: 0.01\ninput_tokens: 100\noutput_tokens: 20",
		"b": "sign_from: 2\nusage: true\ncost_usd: 0.02\ninput_tokens: 200\noutput_tokens: 40",
	}})
	r := d.auto(0)
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "accepted", "accepted", "accepted")
	for i, rec := range recs {
		agent := []string{"a", "b"}[i%2]
		if rec.Turn != i+1 || rec.Seq != i+1 || rec.Agent != agent || rec.Round != i/2+1 || rec.Attempt != 1 || rec.Role != "participant" {
			t.Errorf("record %d: %+v", i, rec)
		}
		if blackbox.ExitCode(rec) != 0 || rec.EndedBy != "self" || rec.Signal != "" {
			t.Errorf("record %d: want exit 0 ended by itself: %s", i, rec)
		}
		if rec.Signed != (i >= 2) {
			t.Errorf("record %d: signed %v", i, rec.Signed)
		}
		if rec.Usage == nil || rec.Usage.CostSource != "reported" || rec.Usage.InputTokens == 0 {
			t.Errorf("record %d: usage %+v", i, rec.Usage)
		}
		if rec.Transcript == nil || rec.Transcript.Raw == "" || rec.Bytes == 0 {
			t.Errorf("record %d: no transcript or output: %+v", i, rec)
		} else if _, err := os.Stat(filepath.Join(d.stateDir(), rec.Transcript.Raw)); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000Z07:00", rec.Started); err != nil {
			t.Errorf("record %d: started %q is not RFC 3339 with milliseconds", i, rec.Started)
		}
		// Provenance: the command as run, the prompt's hash.
		if len(rec.Argv) < 5 || rec.Argv[0] != "fakeagent" || rec.Argv[2] != filepath.Join(d.Dir, d.name) || len(rec.PromptSHA256) != 64 {
			t.Errorf("record %d: argv %q, prompt_sha256 %q", i, rec.Argv, rec.PromptSHA256)
		}
	}
	d.verify(4)
	if s := d.status(); s != "converged" {
		t.Errorf("status %s", s)
	}
	if !strings.Contains(r.Stdout, "converged after 4 turns") || !strings.Contains(r.Stdout, "$0.06, tokens 600 in, 120 out\n") {
		t.Errorf("summary:\n%s", r.Stdout)
	}
	log := d.MustRun(0, "log", d.name)
	if !strings.Contains(log.Stdout, "OUTCOME") || strings.Count(log.Stdout, "accepted") != 4 || !strings.Contains(log.Stdout, "total cost $0.06\n") {
		t.Errorf("walkie log:\n%s", log.Stdout)
	}
	d.noProcessesLeft()
}

// Nobody signs: the loop stops at the cap with max-rounds, exit 10.
func TestMaxRounds(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 2})
	r := d.auto(10)
	d.wantOutcomes(d.turns(), "accepted", "accepted", "accepted", "accepted")
	d.verify(4)
	if s := d.status(); s != "max-rounds" {
		t.Errorf("status %s", s)
	}
	if !strings.Contains(r.Stderr, "max-rounds") {
		t.Errorf("stderr does not say max-rounds:\n%s", r.Stderr)
	}
	d.noProcessesLeft()
}

// The first attempt hangs past the timeout; the retry succeeds. walkie
// turn stops after the one accepted turn.
func TestTimeoutThenRetry(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"},
		defaults: map[string]string{"timeout": "700ms", "stall": "0s"},
		scripts:  map[string]string{"a": "steps:\n  - behavior: hang\n  - {}"}})
	d.MustRun(0, "turn", d.name, "--approve")
	recs := d.turns()
	d.wantOutcomes(recs, "timeout", "accepted")
	if r := recs[0]; r.Attempt != 1 || r.EndedBy != "controller" || r.Signal == "" || !strings.Contains(r.Detail, "timeout") {
		t.Errorf("first attempt: %s", r)
	}
	if r := recs[0]; r.DurationMS < 700 || r.DurationMS > 3000 {
		t.Errorf("first attempt lasted %d ms with a 700ms timeout", r.DurationMS)
	}
	if r := recs[1]; r.Attempt != 2 || r.Turn != 1 || blackbox.ExitCode(r) != 0 {
		t.Errorf("retry: %s", r)
	}
	d.verify(1)
	if s := d.status(); s != "open" {
		t.Errorf("status %s", s)
	}
	if st := d.state(); len(st.Attempts) != 0 || st.Running != nil {
		t.Errorf("state after the accepted retry: attempts %v running %v", st.Attempts, st.Running)
	}
	d.noProcessesLeft()
}

// An agent that prints nothing and writes nothing is stalled; with no
// retries left the debate fails (exit 11).
func TestStall(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"},
		defaults: map[string]string{"stall": "500ms", "retries": "0"},
		scripts:  map[string]string{"a": "behavior: hang"}})
	r := d.auto(11)
	recs := d.turns()
	d.wantOutcomes(recs, "stalled")
	if rec := recs[0]; rec.EndedBy != "controller" || rec.DurationMS < 500 || rec.DurationMS > 3000 {
		t.Errorf("stalled attempt: %s after %d ms", rec, rec.DurationMS)
	}
	if s := d.status(); s != "failed" {
		t.Errorf("status %s", s)
	}
	if !strings.Contains(r.Stderr, "stalled") {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
	d.verify(0)
	d.noProcessesLeft()
}

// An agent that exits 0 without writing: no-turn, retried once, failed.
func TestNoTurn(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, scripts: map[string]string{"a": "behavior: none"}})
	d.auto(11)
	recs := d.turns()
	d.wantOutcomes(recs, "no-turn", "no-turn")
	if recs[0].Attempt != 1 || recs[1].Attempt != 2 || blackbox.ExitCode(recs[1]) != 0 || recs[1].EndedBy != "self" {
		t.Errorf("attempts:\n%s", blackbox.Dump(recs))
	}
	if st := d.state(); st.Status != "failed" || !strings.Contains(st.Reason, "no-turn") {
		t.Errorf("state %s: %s", st.Status, st.Reason)
	}
	// walkie log says where each failed attempt's transcript is, and what
	// the fake agent's cost is (it reports none here: unknown).
	log := d.MustRun(0, "log", d.name)
	for _, want := range []string{"transcripts: .walkie/d/turns/\n", "  turn 1 a try 1 (no-turn): .walkie/d/turns/0001-a-1.txt\n",
		"  turn 1 a try 2 (no-turn): .walkie/d/turns/0001-a-2.txt\n", "total cost unknown: none of the 2 attempts told its cost\n"} {
		if !strings.Contains(log.Stdout, want) {
			t.Errorf("walkie log lacks %q:\n%s", want, log.Stdout)
		}
	}
	d.verify(0)
	d.noProcessesLeft()
}

// An agent that edits the record above its turn: tampered; the file is
// restored byte for byte and its version kept under .walkie/ID/rejected/.
func TestTampered(t *testing.T) {
	for _, behavior := range []string{"edit-turn", "edit-briefing"} {
		t.Run(behavior, func(t *testing.T) {
			d := newDebate(t, setup{participants: []string{"a", "b"},
				defaults: map[string]string{"retries": "0"},
				scripts:  map[string]string{"b": "behavior: " + behavior}})
			d.MustRun(0, "turn", d.name, "--approve")
			before := d.read(d.name)
			r := d.MustRun(11, "turn", d.name)
			recs := d.turns()
			d.wantOutcomes(recs, "accepted", "tampered")
			rec := recs[1]
			if !strings.Contains(rec.Detail, "restored") || rec.Kept == "" {
				t.Errorf("tampered attempt: %s kept=%q", rec, rec.Kept)
			}
			if after := d.read(d.name); !bytes.Equal(after, before) {
				t.Fatalf("the file was not restored byte for byte:\n%s", after)
			}
			kept, err := os.ReadFile(filepath.Join(d.stateDir(), rec.Kept))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(rec.Kept, "rejected/") || bytes.Equal(kept, before) || !bytes.Contains(kept, []byte("## Turn 2 · b")) {
				t.Errorf("kept version %s:\n%s", rec.Kept, kept)
			}
			if !strings.Contains(r.Stderr, "tampered") {
				t.Errorf("stderr:\n%s", r.Stderr)
			}
			d.verify(1)
			d.noProcessesLeft()
		})
	}
}

// Turns that break the format are malformed and undone.
func TestMalformed(t *testing.T) {
	for _, c := range []struct {
		name, behavior, detail string
		turn                   int
	}{
		// Turn 1 follows the briefing, turn 2 a stamped turn: the record
		// parses the two places differently.
		{"wrong-heading", "wrong-heading", "heading", 1},
		{"wrong-heading-turn-2", "wrong-heading", "heading", 2},
		{"two-turns", "two-turns", "exactly one turn", 1},
		{"two-turns-turn-2", "two-turns", "exactly one turn", 2},
		{"wrong-author", "wrong-author", "intruder", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDebate(t, setup{participants: []string{"a", "b"},
				defaults: map[string]string{"retries": "0"},
				scripts:  map[string]string{[]string{"a", "b"}[c.turn-1]: "behavior: " + c.behavior}})
			if c.turn == 2 {
				d.MustRun(0, "turn", d.name, "--approve")
			}
			before := d.read(d.name)
			d.MustRun(11, "turn", d.name, "--approve")
			recs := d.turns()
			rec := recs[len(recs)-1]
			if rec.Turn != c.turn || rec.Outcome != "malformed" || !strings.Contains(rec.Detail, c.detail) || rec.Kept == "" {
				t.Fatalf("want turn %d malformed (%s), kept:\n%s", c.turn, c.detail, blackbox.Dump(recs))
			}
			after := d.read(d.name)
			if c.turn == 1 {
				// --approve pinned the briefing: only the front matter changed.
				after, before = after[bytes.Index(after, []byte("# Briefing")):], before[bytes.Index(before, []byte("# Briefing")):]
			}
			if !bytes.Equal(after, before) {
				t.Errorf("the file was not restored:\n%s", after)
			}
			d.verify(c.turn - 1)
			d.noProcessesLeft()
		})
	}
}

// An agent that exits non-zero without a turn has crashed; one that exits
// non-zero after writing a valid turn has not: the turn counts.
func TestCrashed(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"},
		defaults: map[string]string{"retries": "0"},
		scripts: map[string]string{
			"a": "exit_code: 3",
			"b": "behavior: none\nexit_code: 3",
		}})
	d.auto(11)
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "crashed")
	if blackbox.ExitCode(recs[0]) != 3 || blackbox.ExitCode(recs[1]) != 3 || recs[1].EndedBy != "self" || !strings.Contains(recs[1].Detail, "3") {
		t.Errorf("attempts:\n%s", blackbox.Dump(recs))
	}
	d.verify(1)
	d.noProcessesLeft()
}

// "Not logged in" matches a prompt rule with outcome auth: the debate
// fails at once, with no retry, whatever the retry budget.
func TestAuth(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"},
		defaults: map[string]string{"retries": "3"},
		agents:   map[string]map[string]string{"a": {"rules": `[{match: "Not logged in", outcome: auth, detail: "log in with fakeagent /login"}]`}},
		scripts:  map[string]string{"a": "behavior: not-logged-in"}})
	r := d.auto(11)
	recs := d.turns()
	d.wantOutcomes(recs, "auth")
	// The rule may end the session before the agent's own exit 1.
	if rec := recs[0]; rec.Detail != "log in with fakeagent /login" || (blackbox.ExitCode(rec) != 1 && rec.Signal == "") {
		t.Errorf("auth attempt: %s", rec)
	}
	if s := d.status(); s != "failed" {
		t.Errorf("status %s", s)
	}
	if !strings.Contains(r.Stderr, "not logged in") {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
	d.verify(0)
	d.noProcessesLeft()
}

// A CLI that hangs after answering: the turn is accepted and the session
// ended by the controller once the file has been quiet for the grace.
func TestHangAfterTurn(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1,
		defaults: map[string]string{"grace": "300ms"},
		scripts:  map[string]string{"a": "hang_after: true"}})
	d.auto(10)
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "accepted")
	rec := recs[0]
	if rec.EndedBy != "controller" || rec.Signal != "SIGTERM" || !strings.Contains(rec.Detail, "grace") {
		t.Errorf("hanging agent: %s", rec)
	}
	if rec.DurationMS < 300 || rec.DurationMS > 2000 {
		t.Errorf("the hanging agent was ended after %d ms; the grace is 300ms", rec.DurationMS)
	}
	if recs[1].EndedBy != "self" {
		t.Errorf("second agent: %s", recs[1])
	}
	d.verify(2)
	d.noProcessesLeft()
}

// Three participants take turns in the front matter's order.
func TestThreeParticipants(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b", "c"}, maxRounds: 3, scripts: map[string]string{
		"a": "sign_from: 2", "b": "sign_from: 2", "c": "sign_from: 2",
	}})
	d.auto(0)
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "accepted", "accepted", "accepted", "accepted", "accepted")
	for i, rec := range recs {
		if want := []string{"a", "b", "c"}[i%3]; rec.Agent != want || rec.Round != i/3+1 || rec.Signed != (i >= 3) {
			t.Errorf("record %d: %s round %d signed %v", i, rec, rec.Round, rec.Signed)
		}
	}
	d.verify(6)
	d.noProcessesLeft()
}

// A prompt rule with a reply answers a known question: the agent goes on
// and its turn is accepted.
func TestPromptAnswered(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1,
		agents:  map[string]map[string]string{"a": {"rules": `[{match: "Trust this folder\\?", reply: "y\r"}]`}},
		scripts: map[string]string{"a": `ask: "Trust this folder?"`}})
	d.auto(10)
	d.wantOutcomes(d.turns(), "accepted", "accepted")
	d.verify(2)
	d.noProcessesLeft()
}

// Past the budget, no further turn starts: over-budget, exit 13.
func TestOverBudget(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, top: "budget_usd: 0.015",
		scripts: map[string]string{"a": "usage: true\ncost_usd: 0.01", "b": "usage: true\ncost_usd: 0.01"}})
	r := d.auto(13)
	d.wantOutcomes(d.turns(), "accepted", "accepted")
	if s := d.status(); s != "over-budget" {
		t.Errorf("status %s", s)
	}
	if !strings.Contains(r.Stderr, "budget") {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
	d.noProcessesLeft()
}
