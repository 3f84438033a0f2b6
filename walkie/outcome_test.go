package walkie

import "testing"

// The one list of outcomes a retry cannot change, shared by debate turns
// and round-table reviewers, and which attempts count against the retries.
func TestOutcomeRules(t *testing.T) {
	for _, tc := range []struct {
		o                 Outcome
		retryable, counts bool
	}{
		{OutcomeAccepted, true, false},
		{OutcomeNoTurn, true, true},
		{OutcomeMalformed, true, true},
		{OutcomeTampered, true, true},
		{OutcomeTimeout, true, true},
		{OutcomeStalled, true, true},
		{OutcomeCrashed, true, true},
		{OutcomeAuth, false, true},
		{OutcomeBlockedPrompt, false, true},
		{OutcomeInterrupted, true, false},
		{OutcomeHalted, true, false},
	} {
		if tc.o.Retryable() != tc.retryable || tc.o.Counts() != tc.counts || !tc.o.Valid() {
			t.Errorf("%s: retryable %v counts %v valid %v", tc.o, tc.o.Retryable(), tc.o.Counts(), tc.o.Valid())
		}
	}
	if len(Outcomes) != 11 {
		t.Errorf("a new outcome needs a row here: %v", Outcomes)
	}
	if Outcome("declined").Valid() {
		t.Error("an unknown outcome is valid")
	}
}
