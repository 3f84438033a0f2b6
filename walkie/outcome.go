package walkie

import "slices"

// Outcome names how one attempt at an entry ended: a debate turn, a round
// table review, a distillation. The judge gives the first four; the others
// come from how the agent's session ended or from the controller. They are
// distinct and never folded into one another: a timeout is not a
// disagreement, a crash is not a rejection.
type Outcome string

// The outcomes.
const (
	OutcomeAccepted      Outcome = "accepted"
	OutcomeNoTurn        Outcome = "no-turn"
	OutcomeMalformed     Outcome = "malformed"
	OutcomeTampered      Outcome = "tampered"
	OutcomeTimeout       Outcome = "timeout"
	OutcomeStalled       Outcome = "stalled"
	OutcomeCrashed       Outcome = "crashed"
	OutcomeAuth          Outcome = "auth"
	OutcomeBlockedPrompt Outcome = "blocked-prompt"
	OutcomeInterrupted   Outcome = "interrupted"
	OutcomeHalted        Outcome = "halted"
)

// Outcomes lists every outcome, in the order of the constants.
var Outcomes = []Outcome{OutcomeAccepted, OutcomeNoTurn, OutcomeMalformed, OutcomeTampered, OutcomeTimeout,
	OutcomeStalled, OutcomeCrashed, OutcomeAuth, OutcomeBlockedPrompt, OutcomeInterrupted, OutcomeHalted}

// RuleOutcomes are the outcomes a prompt rule may end a session with; the
// rest are decided by the judge or the controller.
var RuleOutcomes = []Outcome{OutcomeAuth, OutcomeBlockedPrompt, OutcomeStalled, OutcomeCrashed}

// Valid reports whether o is one of the outcomes.
func (o Outcome) Valid() bool { return slices.Contains(Outcomes, o) }

// Retryable reports whether another attempt could end differently. Not
// auth (no retry logs the CLI in) nor a blocking prompt (a trust dialog or
// a usage limit comes back every time): only a person can help. Marked
// here, where the outcomes are named, so every caller applies one rule.
func (o Outcome) Retryable() bool {
	return o != OutcomeAuth && o != OutcomeBlockedPrompt
}

// Counts reports whether the attempt counts against the turn's retries.
// Halted and interrupted attempts were nobody's failure; an accepted one
// is not a failure at all.
func (o Outcome) Counts() bool {
	return o != OutcomeAccepted && o != OutcomeHalted && o != OutcomeInterrupted
}
