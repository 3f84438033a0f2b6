//go:build linux

package realcli

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
)

// failure is one failure class met by one real CLI on turn 1 of a debate
// it opens (the other participant never runs): walkie turn records the
// attempts, and the first attempt's outcome and detail are the preset's.
type failure struct {
	cli string
	// agent is the failing CLI's entry under agents: given the server's
	// URL; nil is its preset pointed at the server with a key.
	agent func(url string) string
	// reply answers a model call; nil is the debater.
	reply    func(d *debater, r *modelserver.Request) (modelserver.Reply, bool)
	defaults map[string]string
	want     []string // the attempts' outcomes
	detail   string   // in the first attempt's detail
	// or, when the CLI may say it either way, one of these
	details []string
	code    int // walkie turn's exit code
	// within bounds the first attempt: a rule or the CLI must end it well
	// before the stall window or the timeout.
	within time.Duration
}

func (fc failure) run(t *testing.T) {
	t.Parallel()
	d := &debater{participants: []string{fc.cli, partner(fc.cli)}, text: proposal}
	reply := d.reply
	if fc.reply != nil {
		reply = func(r *modelserver.Request) (modelserver.Reply, bool) { return fc.reply(d, r) }
	}
	f := newFixture(t, func(file string) modelserver.Script { d.file = file; return modelserver.Script{Func: reply} }, setup{participants: d.participants, defaults: fc.defaults,
		agents: func(url string) map[string]string {
			if fc.agent == nil {
				return nil
			}
			return map[string]string{fc.cli: fc.agent(url)}
		}})
	f.session(fc.code, "turn", "d.walkie.md", "--approve")
	recs := f.turns()
	f.wantOutcomes(recs, fc.want...)
	first := recs[0]
	wants := append([]string{fc.detail}, fc.details...)
	if fc.details != nil {
		wants = fc.details
	}
	if !slices.ContainsFunc(wants, func(w string) bool { return strings.Contains(first.Detail, w) }) {
		t.Errorf("detail %q, want it to say one of %q\n%s", first.Detail, wants, blackbox.Tail(f.transcript(first), 20))
	}
	if fc.within > 0 && time.Duration(first.DurationMS)*time.Millisecond > fc.within {
		t.Errorf("the first attempt took %dms, want under %s: %s", first.DurationMS, fc.within, first)
	}
	f.privateDirsGone()
	for _, r := range recs {
		t.Log(r)
	}
}

// walkie's exit codes (walkie --help lists them).
const (
	exitOK         = 0
	exitFailed     = 11 // retries spent, or auth at once
	exitOverBudget = 13
	exitSignal     = 130
)

// partner is the second participant of a debate cli opens; it never runs.
func partner(cli string) string {
	if cli == "claude" {
		return "codex"
	}
	return "claude"
}

// Not logged in, or a key the API refuses: auth, at once, never retried
// (retries: 1 here), and the debate fails with the reason.
func TestAuth(t *testing.T) {
	refuse := func(status int, msg string) func(*debater, *modelserver.Request) (modelserver.Reply, bool) {
		return func(_ *debater, _ *modelserver.Request) (modelserver.Reply, bool) {
			return modelserver.Error(status, msg), true
		}
	}
	retry := map[string]string{"retries": "1"}
	for name, fc := range map[string]failure{
		"claude/no-key": {cli: "claude", agent: func(url string) string { return claudeAgent(url, false) },
			detail: "claude is not logged in"},
		"claude/refused": {cli: "claude", reply: refuse(401, "invalid x-api-key"), detail: "claude is not logged in or its API key was refused"},
		"codex/no-key": {cli: "codex", agent: func(url string) string { return codexAgent(url, false) },
			detail: "codex has no API key"},
		"codex/refused": {cli: "codex", reply: refuse(401, "Incorrect API key provided"), detail: "codex has no API key or it was refused"},
		"gemini/no-key": {cli: "gemini", agent: func(url string) string { return geminiAgent(url, false) },
			detail: "gemini has no credentials"},
		"gemini/refused": {cli: "gemini", reply: refuse(400, "API key not valid. Please pass a valid API key."), detail: "gemini's API key was refused"},
	} {
		fc.want, fc.code, fc.defaults, fc.within = []string{"auth"}, exitFailed, retry, 60*time.Second
		t.Run(name, fc.run)
	}
}

// A model API that fails with 500 for a whole session: the CLI's own few
// quick retries, then crashed with the preset's detail; walkie's retry
// starts a new session, which the healthy API lets through.
func TestServerError(t *testing.T) {
	for _, cli := range []string{"claude", "codex", "gemini"} {
		fc := failure{cli: cli, defaults: map[string]string{"retries": "1"}, want: []string{"crashed", "accepted"}, code: exitOK,
			detail: "the model API failed", within: 60 * time.Second, reply: failFirstSession(500, "the fake model is down")}
		t.Run(cli, fc.run)
	}
}

// failFirstSession answers every model call of the first CLI session
// with the error status and message, and lets later sessions through, so
// walkie's retry gets a turn. gemini's routing call is answered as usual.
func failFirstSession(status int, message string) func(d *debater, r *modelserver.Request) (modelserver.Reply, bool) {
	var mu sync.Mutex
	sessions := map[string]bool{} // ids of sessions that have failed
	return func(d *debater, r *modelserver.Request) (modelserver.Reply, bool) {
		if isRouting(r) {
			return d.reply(r)
		}
		// A session's id is whatever the CLI sends to tell its sessions
		// apart.
		id := sessionID(r)
		mu.Lock()
		defer mu.Unlock()
		if len(sessions) == 0 || sessions[id] {
			sessions[id] = true
			return modelserver.Error(status, message), true
		}
		return d.reply(r)
	}
}

// sessionID names the CLI session a model call belongs to: claude and
// codex send an id; gemini's system instruction names the session's
// private HOME.
func sessionID(r *modelserver.Request) string {
	for _, h := range []string{"X-Claude-Code-Session-Id", "Session-Id"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	if m, ok := r.Body.(map[string]any); ok {
		b, _ := json.Marshal(m["systemInstruction"])
		return fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return ""
}

// A CLI that refuses the folder: blocked-prompt, with the flag to keep.
// The command is the preset's without that flag, as a user might write it.
func TestUntrustedFolder(t *testing.T) {
	for name, fc := range map[string]failure{
		"codex": {cli: "codex", detail: "keep --skip-git-repo-check",
			agent: func(url string) string {
				return codexAgent(url, true) + "    command: [codex, exec, --json, -s, workspace-write, --ephemeral, -m, \"{model}\", \"{prompt}\"]\n"
			}},
		"gemini": {cli: "gemini", detail: "keep --skip-trust",
			agent: func(url string) string {
				return strings.Replace(geminiAgent(url, true), "    env:\n", "    env:\n      GEMINI_CLI_TRUST_WORKSPACE: \"false\"\n", 1) +
					"    command: [gemini, -p, \"{prompt}\", -o, stream-json, --approval-mode, auto_edit]\n"
			}},
	} {
		fc.want, fc.code, fc.within = []string{"blocked-prompt"}, exitFailed, 60*time.Second
		t.Run(name, fc.run)
	}
}

// No network (the API's port refuses connections): stalled, with the
// preset's detail, well before the stall window (90 s here) or the
// timeout, although codex never exits and keeps printing.
func TestNoNetwork(t *testing.T) {
	closed, err := modelserver.ClosedURL()
	if err != nil {
		t.Fatal(err)
	}
	for _, cli := range []string{"claude", "codex", "gemini"} {
		fc := failure{cli: cli, want: []string{"stalled"}, code: exitFailed, detail: "cannot reach the model API", within: 75 * time.Second,
			agent: func(string) string { return agentFor(cli, closed, true) }}
		t.Run(cli, fc.run)
	}
}

// A model API that accepts the call and never answers: every CLI goes
// silent (claude for 300 s, gemini for 60 s, codex for ever), so the stall
// window ends it as stalled, not the timeout.
func TestModelNeverAnswers(t *testing.T) {
	for _, cli := range []string{"claude", "codex", "gemini"} {
		fc := failure{cli: cli, want: []string{"stalled"}, code: exitFailed, detail: "no output", within: 60 * time.Second,
			defaults: map[string]string{"stall": "10s"},
			reply:    func(*debater, *modelserver.Request) (modelserver.Reply, bool) { return modelserver.Hang(), true }}
		t.Run(cli, fc.run)
	}
}

// budget_usd stops the debate before a turn that would start past it:
// claude's first turn costs $0.0137 of a $0.01 budget, so codex's turn
// never starts.
func TestBudget(t *testing.T) {
	t.Parallel()
	d := &debater{participants: []string{"claude", "codex"}, text: proposal}
	f := newFixture(t, d.script, setup{participants: d.participants, top: "budget_usd: 0.01\n"})
	sum := parseSummary(t, f.session(exitOverBudget, "auto", "d.walkie.md", "--approve", "--json"))
	recs := f.turns()
	f.wantOutcomes(recs, "accepted")
	if sum.Status != "over-budget" || sum.Turns != 1 || !near(sum.CostUSD, recs[0].Usage.CostUSD) || !strings.Contains(sum.Reason, "of a $0.01 budget") {
		t.Errorf("summary %+v\nstate: %s", sum, f.state())
	}
	if n := len(f.srv.ModelRequests(modelserver.OpenAI)); n != 0 {
		t.Errorf("codex called the model %d times past the budget", n)
	}
	f.MustRun(0, "verify", "d.walkie.md")
}

// walkie stopped by SIGTERM in the middle of a real session (the model
// hangs, so the CLI is waiting): the attempt is recorded as interrupted
// and the CLI's whole process tree is gone when walkie exits.
func TestInterruptedLeavesNothing(t *testing.T) {
	for _, cli := range []string{"claude", "codex", "gemini"} {
		t.Run(cli, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, fixed(modelserver.Script{Func: func(r *modelserver.Request) (modelserver.Reply, bool) {
				if isRouting(r) {
					return modelserver.Text(routing), true
				}
				return modelserver.Hang(), true
			}}), setup{participants: []string{cli, partner(cli)}})
			release := f.slot()
			p := f.Start("auto", "d.walkie.md", "--approve", "--config", "walkie.yaml")
			// Once the CLI waits on the model (gemini after its routing
			// call), every process of the session is up.
			calls := 1
			if cli == "gemini" {
				calls = 2
			}
			f.waitRequests(calls, 90*time.Second)
			if len(f.marker.Pids()) < 2 {
				t.Errorf("only %d processes carry the marker: is it passed on?", len(f.marker.Pids()))
			}
			p.Signal(syscall.SIGTERM)
			r := p.Wait(f.Limit)
			release()
			f.noneLeft()
			recs := f.turns()
			f.wantOutcomes(recs, "interrupted")
			if r.Code != exitSignal {
				t.Errorf("walkie exited %d after SIGTERM, want 130\n%s", r.Code, blackbox.Tail(r.Stderr, 10))
			}
			f.privateDirsGone()
			t.Log(recs[0])
		})
	}
}
