package engine

import (
	"cmp"
	"fmt"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Failure names the outcome of a session that left no valid result (a
// turn, a verdict, a briefing) when its ending says more than the file
// does: a prompt rule, the timeout, a stall, a crash. ok is false for a
// clean exit, where the file alone tells what went wrong. what names the
// missing result in the detail ("turn", "verdict").
func Failure(res session.Result, what string) (outcome walkie.Outcome, detail string, ok bool) {
	switch {
	case res.Ending == session.EndBlocked:
		out := walkie.Outcome(res.RuleOutcome)
		if out == "" {
			out = walkie.OutcomeBlockedPrompt
		}
		return out, cmp.Or(res.Detail, "blocked on: "+res.Matched), true
	case res.Ending == session.EndTimeout:
		return walkie.OutcomeTimeout, res.Detail, true
	case res.Ending == session.EndStalled:
		return walkie.OutcomeStalled, res.Detail, true
	case res.Ending == session.EndExited && (res.ExitCode != 0 || res.Signal != ""):
		return walkie.OutcomeCrashed, cmp.Or(res.Detail, fmt.Sprintf("exited with code %d", res.ExitCode)) + " without a valid " + what, true
	}
	return "", "", false
}

// Stopped is the outcome and detail of an attempt that someone stopped
// (Result.Stop): halted or interrupted, whatever it wrote; ok is false when
// nobody stopped it. what names the attempt ("attempt", "review").
func Stopped(stop walkie.Outcome, what string) (walkie.Outcome, string, bool) {
	switch stop {
	case walkie.OutcomeHalted:
		// A person halted it, by walkie halt, the fleet page or any other
		// way to the state's halt: the reason given is in the state.
		return stop, "halted by a person; the " + what + " was discarded", true
	case walkie.OutcomeInterrupted:
		return stop, "the controller was interrupted; the " + what + " was discarded", true
	}
	return "", "", false
}

// Explain adds what the CLI itself said of how it went (Said) to a failed
// attempt's detail: a write its permissions refused, the error it
// reported, or its last words, which tell more than "no new turn".
func (r Result) Explain(detail string) string {
	if r.Said == "" {
		return detail
	}
	if detail == "" {
		return r.Said
	}
	return detail + "; " + r.Said
}

// EndedAfterGrace is appended to an accepted result's detail when the
// engine ended the agent: it had answered but not exited.
func EndedAfterGrace(res session.Result, detail, who string) string {
	if res.EndedBy == session.EndedByController {
		return detail + "; the " + who + " was ended after the grace period"
	}
	return detail
}

// Fill copies what the session knows into an attempt's record: end,
// duration, exit code or signal, who ended it, output bytes, usage,
// provenance, the remote worker, and the transcripts relative to stateDir. Started stays
// the attempt's own start, the key under which a restarted controller
// finds the attempt in the log.
func (r Result) Fill(rec *TurnRecord, stateDir string) {
	rec.Ended = r.Ended.UTC()
	rec.DurationMS = r.Duration.Milliseconds()
	if r.Signal == "" && r.ExitCode >= 0 {
		code := r.ExitCode
		rec.ExitCode = &code
	}
	rec.Signal = r.Signal
	rec.EndedBy = r.EndedBy
	rec.Bytes = r.Bytes
	rec.Usage = r.Usage
	rec.Provenance = r.Provenance
	rec.Worker = r.Worker
	rec.Sandbox = r.Sandbox
	rec.Transcript = Transcript{Raw: Rel(stateDir, r.RawPath), Text: Rel(stateDir, r.TextPath)}
}
