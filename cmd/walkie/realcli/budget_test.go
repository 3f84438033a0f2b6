//go:build linux

package realcli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
)

// slowClose is the debater with a model that takes delay to write its
// closing message, the call after the turn is on disk (issue 13: walkie
// ended the CLI after the grace, before it printed its usage).
func slowClose(d *debater, delay time.Duration) func(string) modelserver.Script {
	return func(file string) modelserver.Script {
		d.file = file
		return modelserver.Script{Func: func(r *modelserver.Request) (modelserver.Reply, bool) {
			rep, ok := d.reply(r)
			if !isRouting(r) && toolResults(r) > 0 {
				rep.Delay = delay
			}
			return rep, ok
		}}
	}
}

// The closing message comes 4 s after the turn is on disk, twice the
// grace (a grace of 2 s, not the fixture's 500 ms: a CLI on a loaded
// machine may take longer than that to exit after its final event, and
// it is the wait for that event this test is about): each CLI is left to print its final event, so the turn's whole
// cost is recorded, and it then exits by itself. Each attempt records what
// produced it: the command (prompt replaced), the prompt's hash, the CLI's
// version, the model and the effort.
func TestSlowClosingMessage(t *testing.T) {
	pinned := map[string]*regexp.Regexp{
		"claude": regexp.MustCompile(`^2\.1\.197 \(Claude Code\)$`),
		"codex":  regexp.MustCompile(`^codex-cli 0\.171\.0$`),
		"gemini": regexp.MustCompile(`^0\.61\.0$`),
	}
	for _, cli := range []string{"claude", "codex", "gemini"} {
		t.Run(cli, func(t *testing.T) {
			t.Parallel()
			d := &debater{participants: []string{cli, partner(cli)}, text: proposal}
			f := newFixture(t, slowClose(d, 4*time.Second), setup{participants: d.participants, defaults: map[string]string{"grace": "2s"}})
			f.session(exitOK, "turn", "d.walkie.md", "--approve")
			recs := f.turns()
			f.wantOutcomes(recs, "accepted")
			r := recs[0]
			if r.Usage == nil || strings.HasPrefix(r.Usage.CostSource, "unknown") || r.Usage.CostUSD <= 0 || r.Usage.OutputTokens < 68 {
				t.Errorf("the cost was lost: %s", r)
			}
			if r.EndedBy != "self" || r.DurationMS < 4000 {
				t.Errorf("want the CLI to finish its closing message and exit by itself: %s", r)
			}
			if !pinned[cli].MatchString(r.CLIVersion) {
				t.Errorf("cli_version %q", r.CLIVersion)
			}
			if !strings.Contains(strings.Join(r.Argv, " "), "{prompt}") || r.Argv[0] != cli || len(r.PromptSHA256) != 64 {
				t.Errorf("argv %q, prompt_sha256 %q", r.Argv, r.PromptSHA256)
			}
			want := map[string]string{"claude": "claude-opus-4-8", "codex": "gpt-6.2-sol", "gemini": "gemini-3.8-flash"}[cli]
			if r.Model != want || r.Effort != map[string]string{"codex": "low"}[cli] {
				t.Errorf("model %q effort %q, want %q", r.Model, r.Effort, want)
			}
			f.privateDirsGone()
			t.Log(r)
		})
	}
}

// A budget stops a debate whose model is slow: claude's turn costs $0.0137
// of a $0.01 budget even when its closing message takes longer than the
// grace, so codex never starts (issue 13: the cost was unknown, and the
// debate converged far over budget with exit 0).
func TestBudgetSlowModel(t *testing.T) {
	t.Parallel()
	d := &debater{participants: []string{"claude", "codex"}, text: proposal}
	f := newFixture(t, slowClose(d, 3*time.Second), setup{participants: d.participants, top: "budget_usd: 0.01\n"})
	sum := parseSummary(t, f.session(exitOverBudget, "auto", "d.walkie.md", "--approve", "--json"))
	recs := f.turns()
	f.wantOutcomes(recs, "accepted")
	if sum.Status != "over-budget" || sum.Turns != 1 || !near(sum.CostUSD, 0.0137) || !strings.Contains(sum.Reason, "spent $0.0137 of a $0.01 budget") {
		t.Errorf("summary %+v\n%s", sum, blackbox.Dump(recs))
	}
	if n := len(f.srv.ModelRequests(modelserver.OpenAI)); n != 0 {
		t.Errorf("codex called the model %d times past the budget", n)
	}
	f.MustRun(0, "verify", "d.walkie.md")
	// The record says why it stopped.
	if rec := f.read("d.walkie.md"); !strings.Contains(rec, "walkie: the debate stopped over its budget: spent $0.0137 of a $0.01 budget") {
		t.Errorf("no closing note:\n%s", rec)
	}
}

// The preset's reasoning effort reaches the model as the CLI sends it:
// codex asks for low (its own default for gpt-5.5 is medium), and claude's
// model and effort keys become its --model and --effort.
func TestModelAndEffort(t *testing.T) {
	t.Parallel()
	d := &debater{participants: []string{"claude", "codex"}, text: proposal}
	f := newFixture(t, d.script, setup{participants: d.participants, maxRounds: 1,
		agents: func(url string) map[string]string {
			return map[string]string{
				"claude": claudeAgent(url, true) + "    model: claude-sonnet-4-5\n    effort: low\n",
				"codex":  codexAgent(url, true) + "    model: gpt-5.5\n",
			}
		}})
	f.session(10, "auto", "d.walkie.md", "--approve") // max-rounds: the proposal is signed by codex only
	for v, want := range map[modelserver.Vendor][]string{
		modelserver.OpenAI:    {`"model":"gpt-5.5"`, `"effort":"low"`},
		modelserver.Anthropic: {`"model":"claude-sonnet-4-5"`},
	} {
		reqs := f.srv.ModelRequests(v)
		if len(reqs) == 0 {
			t.Fatalf("%s: no model call", v)
		}
		for _, w := range want {
			if !strings.Contains(string(reqs[0].Raw), w) {
				t.Errorf("%s's first call lacks %s", v, w)
			}
		}
	}
	recs := f.turns()
	if recs[0].Model != "claude-sonnet-4-5" || recs[0].Effort != "low" || !strings.Contains(strings.Join(recs[0].Argv, " "), "--model claude-sonnet-4-5 --effort low") {
		t.Errorf("claude's record: model %q effort %q argv %q", recs[0].Model, recs[0].Effort, recs[0].Argv)
	}
	if recs[1].Model != "gpt-5.5" || recs[1].Effort != "low" {
		t.Errorf("codex's record: model %q effort %q", recs[1].Model, recs[1].Effort)
	}
}
