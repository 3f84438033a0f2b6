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
		{"halted wins over a valid turn", ended, accepted, walkie.OutcomeHalted, walkie.OutcomeHalted, "walkie halt", ""},
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
		return TurnRecord{Turn: 3, Agent: "b", Outcome: outcome, Detail: "why", Usage: &Usage{CostUSD: cost}}
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
	t.Run("a blocking prompt is never retried", func(t *testing.T) {
		s := &walkie.State{}
		(&outcome{retries: 5, rec: rec(walkie.OutcomeBlockedPrompt, 0)}).applyTo(s)
		if s.Status != walkie.StatusFailed || !strings.Contains(s.Reason, "never retried") {
			t.Errorf("%+v", s)
		}
	})
}
