package controller

import (
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

func TestClassify(t *testing.T) {
	exited := func(code int) session.Result {
		return session.Result{Ending: session.EndExited, ExitCode: code, EndedBy: session.EndedBySelf, Detail: "exit code " + string(rune('0'+code))}
	}
	verdict := func(outcome walkie.Outcome, detail string) walkie.Settled {
		return walkie.Settled{Verdict: walkie.Verdict{Outcome: outcome, Detail: detail}}
	}
	accepted, noTurn := verdict(walkie.VerdictAccepted, ""), verdict(walkie.VerdictNoTurn, "no new turn was written")
	ended := session.Result{Ending: session.EndCaller, EndedBy: session.EndedByController, Signal: "SIGTERM", ExitCode: -1}
	for _, c := range []struct {
		name    string
		res     session.Result
		settled walkie.Settled
		stop    walkie.Outcome
		outcome walkie.Outcome
		detail  string // a part of the detail
		said    string // what the CLI's output said
	}{
		{"accepted", exited(0), accepted, "", walkie.OutcomeAccepted, "turn recorded", ""},
		{"accepted despite a non-zero exit", exited(3), accepted, "", walkie.OutcomeAccepted, "turn recorded", ""},
		{"accepted, then ended after the grace", ended, accepted, "", walkie.OutcomeAccepted, "after the grace", ""},
		{"posted with walkie post", exited(0), walkie.Settled{Verdict: walkie.Verdict{Outcome: walkie.VerdictAccepted, Stamped: true}}, "", walkie.OutcomeAccepted, "walkie post", ""},
		{"halted wins over a valid turn", ended, accepted, walkie.OutcomeHalted, walkie.OutcomeHalted, "halted by a person", ""},
		{"interrupted", ended, noTurn, walkie.OutcomeInterrupted, walkie.OutcomeInterrupted, "interrupted", ""},
		{"tampered wins over a crash", exited(1), verdict(walkie.VerdictTampered, "the file was changed above the new turn"), "", walkie.OutcomeTampered, "restored", ""},
		{"auth rule", session.Result{Ending: session.EndBlocked, RuleOutcome: "auth", Detail: "log in"}, noTurn, "", walkie.OutcomeAuth, "log in", ""},
		{"rule without an outcome name", session.Result{Ending: session.EndBlocked, Matched: "Continue?"}, noTurn, "", walkie.OutcomeBlockedPrompt, "Continue?", ""},
		{"timeout", session.Result{Ending: session.EndTimeout, Detail: "still running after the 1s timeout"}, noTurn, "", walkie.OutcomeTimeout, "timeout", ""},
		{"timeout wins over a malformed turn", session.Result{Ending: session.EndTimeout, Detail: "still running"}, verdict(walkie.VerdictMalformed, "bad heading"), "", walkie.OutcomeTimeout, "still running", ""},
		{"stalled", session.Result{Ending: session.EndStalled, Detail: "no output"}, noTurn, "", walkie.OutcomeStalled, "no output", ""},
		{"crashed", exited(2), noTurn, "", walkie.OutcomeCrashed, "without a valid turn", ""},
		{"killed by a signal", session.Result{Ending: session.EndExited, ExitCode: -1, Signal: "SIGSEGV", Detail: "killed by SIGSEGV"}, noTurn, "", walkie.OutcomeCrashed, "SIGSEGV", ""},
		{"malformed", exited(0), verdict(walkie.VerdictMalformed, "a second heading"), "", walkie.OutcomeMalformed, "second heading", ""},
		{"no turn", exited(0), noTurn, "", walkie.OutcomeNoTurn, "no new turn", ""},
		// What the CLI said goes with a failure, never with a success.
		{"no turn, and why", exited(0), noTurn, "", walkie.OutcomeNoTurn, `no new turn was written; a tool call was refused or failed: "blocked"`, `a tool call was refused or failed: "blocked"`},
		{"crashed, and why", exited(1), noTurn, "", walkie.OutcomeCrashed, `without a valid turn; the CLI reported "API Error: 500"`, `the CLI reported "API Error: 500"`},
		{"malformed, and why", exited(0), verdict(walkie.VerdictMalformed, "a second heading"), "", walkie.OutcomeMalformed, `a second heading; its last message: "done"`, `its last message: "done"`},
		{"accepted says nothing more", exited(0), accepted, "", walkie.OutcomeAccepted, "turn recorded", `its last message: "done"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			outcome, detail := classify(engine.Result{Result: c.res, Stop: c.stop, Said: c.said}, c.settled)
			if outcome != c.outcome || !strings.Contains(detail, c.detail) || outcome == walkie.OutcomeAccepted && strings.Contains(detail, "message") {
				t.Errorf("got %s (%s), want %s (…%s…)", outcome, detail, c.outcome, c.detail)
			}
		})
	}
}

func TestOutcomeApply(t *testing.T) {
	rec := func(outcome walkie.Outcome, cost float64) TurnRecord {
		return TurnRecord{Turn: 3, Agent: "b", Outcome: outcome, Detail: "why", Usage: &Usage{Kind: CostReported, CostUSD: cost}}
	}
	t.Run("accepted clears the retry count", func(t *testing.T) {
		s := &walkie.State{Running: &walkie.Attempt{Turn: 3}, Attempts: map[string]int{"3": 1}, CostUSD: 1}
		(&outcome{retries: 1, rec: rec(walkie.OutcomeAccepted, 0.5)}).applyTo(s)
		if s.Running != nil || len(s.Attempts) != 0 || s.CostUSD != 1.5 || s.Status != "" {
			t.Errorf("%+v", s)
		}
	})
	for _, o := range []walkie.Outcome{walkie.OutcomeHalted, walkie.OutcomeInterrupted} {
		t.Run(string(o)+" does not count", func(t *testing.T) {
			s := &walkie.State{Running: &walkie.Attempt{Turn: 3}}
			(&outcome{retries: 0, rec: rec(o, 0.25)}).applyTo(s)
			if s.Running != nil || len(s.Attempts) != 0 || s.Status != "" || s.CostUSD != 0.25 {
				t.Errorf("%+v", s)
			}
		})
	}
	t.Run("a failure counts until the retries are spent", func(t *testing.T) {
		s := &walkie.State{}
		o := &outcome{retries: 1, rec: rec(walkie.OutcomeTimeout, 0)}
		o.applyTo(s)
		if s.Attempts["3"] != 1 || s.Status != "" {
			t.Fatalf("after one: %+v", s)
		}
		o.applyTo(s)
		if s.Attempts["3"] != 2 || s.Status != walkie.StatusFailed || !strings.Contains(s.Reason, "timeout after 2 attempts") {
			t.Errorf("after two: %+v", s)
		}
	})
	t.Run("auth is never retried", func(t *testing.T) {
		s := &walkie.State{}
		(&outcome{retries: 5, rec: rec(walkie.OutcomeAuth, 0)}).applyTo(s)
		if s.Status != walkie.StatusFailed || !strings.Contains(s.Reason, "not logged in") {
			t.Errorf("%+v", s)
		}
	})
	// The reason a person reads says each thing once: "1 attempt", never
	// "1 attempts"; a rule's detail that says "not logged in" (or opens
	// with the agent's name) is not wrapped in the same words again.
	t.Run("the reason reads once", func(t *testing.T) {
		for _, c := range []struct {
			name    string
			retries int
			rec     TurnRecord
			want    string
		}{
			{"one attempt", 0, TurnRecord{Turn: 3, Agent: "b", Outcome: walkie.OutcomeTimeout, Detail: "why"},
				"turn 3: b: timeout after 1 attempt (why)"},
			{"preset auth detail", 5, TurnRecord{Turn: 3, Agent: "claude", Outcome: walkie.OutcomeAuth,
				Detail: "claude is not logged in or its API key was refused: set ANTHROPIC_API_KEY"},
				"turn 3: claude is not logged in or its API key was refused: set ANTHROPIC_API_KEY; auth is never retried"},
			{"auth detail for another participant", 5, TurnRecord{Turn: 3, Agent: "cla", Outcome: walkie.OutcomeAuth, Detail: "the CLI is not logged in"},
				"turn 3: cla: the CLI is not logged in; auth is never retried"},
			{"auth detail that does not say it", 5, TurnRecord{Turn: 3, Agent: "cla", Outcome: walkie.OutcomeAuth, Detail: "bad key"},
				"turn 3: cla: not logged in: bad key; auth is never retried"},
			{"auth without a detail", 5, TurnRecord{Turn: 3, Agent: "b", Outcome: walkie.OutcomeAuth},
				"turn 3: b is not logged in; auth is never retried"},
			{"blocked on a matched prompt", 5, TurnRecord{Turn: 3, Agent: "b", Outcome: walkie.OutcomeBlockedPrompt, Detail: "blocked on: Do you trust this folder?"},
				"turn 3: b: blocked on: Do you trust this folder?; a blocking prompt is never retried"},
			{"blocked, the preset's words", 5, TurnRecord{Turn: 3, Agent: "codex", Outcome: walkie.OutcomeBlockedPrompt, Detail: "codex hit its usage limit: wait for the reset"},
				"turn 3: codex hit its usage limit: wait for the reset; a blocking prompt is never retried"},
			{"a name that only starts the same", 5, TurnRecord{Turn: 3, Agent: "codex", Outcome: walkie.OutcomeBlockedPrompt, Detail: "codex-mini hit a limit"},
				"turn 3: codex: blocked: codex-mini hit a limit; a blocking prompt is never retried"},
		} {
			s := &walkie.State{}
			(&outcome{retries: c.retries, rec: c.rec}).applyTo(s)
			if s.Status != walkie.StatusFailed || s.Reason != c.want {
				t.Errorf("%s: %s %q\n want %q", c.name, s.Status, s.Reason, c.want)
			}
		}
	})
	t.Run("a blocking prompt is never retried", func(t *testing.T) {
		s := &walkie.State{}
		(&outcome{retries: 5, rec: rec(walkie.OutcomeBlockedPrompt, 0)}).applyTo(s)
		if s.Status != walkie.StatusFailed || !strings.Contains(s.Reason, "never retried") {
			t.Errorf("%+v", s)
		}
	})
}
