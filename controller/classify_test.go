package controller

import (
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

func TestClassify(t *testing.T) {
	exited := func(code int) session.Result {
		return session.Result{Ending: session.EndExited, ExitCode: code, EndedBy: session.EndedBySelf, Detail: "exit code " + string(rune('0'+code))}
	}
	verdict := func(outcome, detail string) walkie.Settled {
		return walkie.Settled{Verdict: walkie.Verdict{Outcome: outcome, Detail: detail}}
	}
	accepted, noTurn := verdict(walkie.VerdictAccepted, ""), verdict(walkie.VerdictNoTurn, "no new turn was written")
	ended := session.Result{Ending: session.EndCaller, EndedBy: session.EndedByController, Signal: "SIGTERM", ExitCode: -1}
	for _, c := range []struct {
		name    string
		res     session.Result
		settled walkie.Settled
		how     string
		outcome string
		detail  string // a part of the detail
	}{
		{"accepted", exited(0), accepted, "", OutcomeAccepted, "turn recorded"},
		{"accepted despite a non-zero exit", exited(3), accepted, "", OutcomeAccepted, "turn recorded"},
		{"accepted, then ended after the grace", ended, accepted, "", OutcomeAccepted, "after the grace"},
		{"posted with walkie post", exited(0), walkie.Settled{Verdict: walkie.Verdict{Outcome: walkie.VerdictAccepted, Stamped: true}}, "", OutcomeAccepted, "walkie post"},
		{"halted wins over a valid turn", ended, accepted, OutcomeHalted, OutcomeHalted, "walkie halt"},
		{"interrupted", ended, noTurn, OutcomeInterrupted, OutcomeInterrupted, "interrupted"},
		{"tampered wins over a crash", exited(1), verdict(walkie.VerdictTampered, "the file was changed above the new turn"), "", OutcomeTampered, "restored"},
		{"auth rule", session.Result{Ending: session.EndBlocked, RuleOutcome: "auth", Detail: "log in"}, noTurn, "", OutcomeAuth, "log in"},
		{"rule without an outcome name", session.Result{Ending: session.EndBlocked, Matched: "Continue?"}, noTurn, "", OutcomeBlockedPrompt, "Continue?"},
		{"timeout", session.Result{Ending: session.EndTimeout, Detail: "still running after the 1s timeout"}, noTurn, "", OutcomeTimeout, "timeout"},
		{"timeout wins over a malformed turn", session.Result{Ending: session.EndTimeout, Detail: "still running"}, verdict(walkie.VerdictMalformed, "bad heading"), "", OutcomeTimeout, "still running"},
		{"stalled", session.Result{Ending: session.EndStalled, Detail: "no output"}, noTurn, "", OutcomeStalled, "no output"},
		{"crashed", exited(2), noTurn, "", OutcomeCrashed, "without a valid turn"},
		{"killed by a signal", session.Result{Ending: session.EndExited, ExitCode: -1, Signal: "SIGSEGV", Detail: "killed by SIGSEGV"}, noTurn, "", OutcomeCrashed, "SIGSEGV"},
		{"malformed", exited(0), verdict(walkie.VerdictMalformed, "a second heading"), "", OutcomeMalformed, "second heading"},
		{"no turn", exited(0), noTurn, "", OutcomeNoTurn, "no new turn"},
	} {
		t.Run(c.name, func(t *testing.T) {
			outcome, detail := classify(c.res, c.settled, c.how)
			if outcome != c.outcome || !strings.Contains(detail, c.detail) {
				t.Errorf("got %s (%s), want %s (…%s…)", outcome, detail, c.outcome, c.detail)
			}
		})
	}
}

func TestOutcomeApply(t *testing.T) {
	rec := func(outcome string, cost float64) TurnRecord {
		return TurnRecord{Turn: 3, Agent: "b", Outcome: outcome, Detail: "why", Usage: &Usage{CostUSD: cost}}
	}
	t.Run("accepted clears the retry count", func(t *testing.T) {
		s := &walkie.State{Running: &walkie.Attempt{Turn: 3}, Attempts: map[string]int{"3": 1}, CostUSD: 1}
		(&outcome{retries: 1, rec: rec(OutcomeAccepted, 0.5)}).applyTo(s)
		if s.Running != nil || len(s.Attempts) != 0 || s.CostUSD != 1.5 || s.Status != "" {
			t.Errorf("%+v", s)
		}
	})
	for _, o := range []string{OutcomeHalted, OutcomeInterrupted} {
		t.Run(o+" does not count", func(t *testing.T) {
			s := &walkie.State{Running: &walkie.Attempt{Turn: 3}}
			(&outcome{retries: 0, rec: rec(o, 0.25)}).applyTo(s)
			if s.Running != nil || len(s.Attempts) != 0 || s.Status != "" || s.CostUSD != 0.25 {
				t.Errorf("%+v", s)
			}
		})
	}
	t.Run("a failure counts until the retries are spent", func(t *testing.T) {
		s := &walkie.State{}
		o := &outcome{retries: 1, rec: rec(OutcomeTimeout, 0)}
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
		(&outcome{retries: 5, rec: rec(OutcomeAuth, 0)}).applyTo(s)
		if s.Status != walkie.StatusFailed || !strings.Contains(s.Reason, "not logged in") {
			t.Errorf("%+v", s)
		}
	})
	t.Run("a blocking prompt is never retried", func(t *testing.T) {
		s := &walkie.State{}
		(&outcome{retries: 5, rec: rec(OutcomeBlockedPrompt, 0)}).applyTo(s)
		if s.Status != walkie.StatusFailed || !strings.Contains(s.Reason, "never retried") {
			t.Errorf("%+v", s)
		}
	})
}

// The one list of outcomes a retry cannot change, shared by debate turns
// and round-table reviewers.
func TestRetryable(t *testing.T) {
	for _, o := range []string{OutcomeNoTurn, OutcomeTimeout, OutcomeStalled, OutcomeMalformed, OutcomeTampered, OutcomeCrashed} {
		if !retryable(o) {
			t.Errorf("%s is not retried", o)
		}
	}
	for _, o := range []string{OutcomeAuth, OutcomeBlockedPrompt} {
		if retryable(o) {
			t.Errorf("%s is retried", o)
		}
	}
}
