//go:build linux

package realcli

import (
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/config"
)

// The real claude and codex debate to convergence: three turns, each
// appended by the CLI's own shell tool, the record verifies, and
// the log holds each turn's usage: claude's reported cost, codex's
// tokens priced from the table and marked as an estimate.
func TestDebateClaudeCodex(t *testing.T) {
	t.Parallel()
	d := &debater{participants: []string{"claude", "codex"}, text: proposal}
	f := newFixture(t, d.script, setup{participants: d.participants})

	sum := parseSummary(t, f.session(0, "auto", "d.walkie.md", "--approve", "--json"))
	recs := f.turns()
	f.wantOutcomes(recs, "accepted", "accepted", "accepted")
	if sum.Status != "converged" || sum.Turns != 3 {
		t.Fatalf("status %s after %d turns (%s)", sum.Status, sum.Turns, sum.Reason)
	}
	f.MustRun(0, "verify", "d.walkie.md")
	for i, r := range recs {
		if r.Attempt != 1 || r.Signed != (i > 0) || r.Usage == nil {
			t.Errorf("%s, signed %v", r, r.Signed)
		}
	}
	// claude: two model calls of 1200 in and 34 out, and claude's own cost.
	if u := recs[0].Usage; u.CostSource != "reported" || u.CostUSD <= 0 || u.InputTokens != 2400 || u.OutputTokens != 68 {
		t.Errorf("claude's usage: %s", recs[0])
	}
	// codex: the same tokens at gpt-6.2-sol's $2/$10 per million.
	if u := recs[1].Usage; !strings.HasPrefix(u.CostSource, "estimated (pricing as of ") || u.InputTokens != 2400 || u.OutputTokens != 68 || !near(u.CostUSD, (2400*2+68*10)/1e6) {
		t.Errorf("codex's usage: %s", recs[1])
	}
	if !near(sum.CostUSD, recs[0].Usage.CostUSD+recs[1].Usage.CostUSD+recs[2].Usage.CostUSD) {
		t.Errorf("debate cost $%f is not the sum of its turns\n%s", sum.CostUSD, blackbox.Dump(recs))
	}
	// The pinned prompt is what reached each model.
	for _, who := range []string{"claude", "codex"} {
		if !f.srv.Saw("You are " + who + ", one participant in a written debate between claude and codex.") {
			t.Errorf("%s's prompt did not reach the model", who)
		}
	}
	// codex's model calls carry walkie's instructions, not codex's own.
	if own, walkies := codexInstructions(f.srv); own > 0 || walkies == 0 {
		t.Errorf("of codex's calls, %d carry codex's own instructions and %d walkie's", own, walkies)
	}
	f.privateDirsGone()
	for _, r := range recs {
		t.Log(r)
	}
}

// codexInstructions counts codex's model calls that carry its built-in
// instructions ("You are Codex, …") and those that carry walkie's
// (config.RoleInstructions) instead.
func codexInstructions(srv *modelserver.Server) (own, walkies int) {
	first, _, _ := strings.Cut(config.RoleInstructions(config.RoleDebater), ",")
	for _, r := range srv.ModelRequests(modelserver.OpenAI) {
		if r.HasText("You are Codex,") {
			own++
		}
		if r.HasText(first) {
			walkies++
		}
	}
	return own, walkies
}

// Three parties: the real gemini joins, appends with its edit tool (its
// preset offers no shell), and routes each turn through two models, each
// priced at its own rate.
func TestDebateThreeParties(t *testing.T) {
	t.Parallel()
	d := &debater{participants: []string{"claude", "codex", "gemini"}, text: proposal}
	f := newFixture(t, d.script, setup{participants: d.participants, maxRounds: 2})

	sum := parseSummary(t, f.session(0, "auto", "d.walkie.md", "--approve", "--json"))
	recs := f.turns()
	f.wantOutcomes(recs, "accepted", "accepted", "accepted", "accepted")
	if sum.Status != "converged" || sum.Turns != 4 {
		t.Fatalf("status %s after %d turns (%s)", sum.Status, sum.Turns, sum.Reason)
	}
	f.MustRun(0, "verify", "d.walkie.md")
	g := recs[2]
	if g.Agent != "gemini" || !g.Signed {
		t.Fatalf("turn 3: %s", g)
	}
	// The router's call on gemini-3.5-flash-lite, then two calls on
	// gemini-3.8-flash: 1200/34 and 2400/68 tokens.
	want := (1200*0.30+34*2.50)/1e6 + (2400*0.75+68*3.75)/1e6
	if u := g.Usage; u == nil || !strings.HasPrefix(u.CostSource, "estimated") || u.InputTokens != 3600 || u.OutputTokens != 102 || !near(u.CostUSD, want) {
		t.Errorf("gemini's usage: %s, want $%f", g, want)
	}
	var routed bool
	for _, r := range f.srv.ModelRequests(modelserver.Gemini) {
		routed = routed || isRouting(r)
	}
	if !routed {
		t.Error("gemini made no routing call: the preset no longer runs it without -m?")
	}
	f.privateDirsGone()
	for _, r := range recs {
		t.Log(r)
	}
}
