package controller

import (
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// logEnded logs the end of an attempt in one line of the log: its record,
// the record as settled left it (nil when nothing was settled), and the
// attempt's outcome applied to the state (retries, the failed status,
// cost). The record and its effect are durable together or not at all,
// so a controller killed at any moment leaves the attempt either running
// (recovered by the next one) or ended and applied.
func (c *controller) logEnded(retries int, rec TurnRecord, settled *walkie.Settled) error {
	_, err := c.changeState(walkie.StateChange{Op: walkie.OpEnded, Attempt: rec, Settled: settled}, func(_ *walkie.Doc, _ []byte, s *walkie.State) error {
		c.applyTo(s, retries, rec)
		return nil
	})
	return err
}

// applyOutcome applies the outcome of an attempt already logged (by a
// layout-1 walkie that died before it applied it) to the state.
func (c *controller) applyOutcome(retries int, rec TurnRecord) error {
	_, err := c.updateState(walkie.OpState, func(_ *walkie.Doc, _ []byte, s *walkie.State) error {
		c.applyTo(s, retries, rec)
		return nil
	})
	return err
}

// applyTo applies the outcome of rec to s, and says when it failed the
// debate.
func (c *controller) applyTo(s *walkie.State, retries int, rec TurnRecord) {
	(&outcome{retries: retries, rec: rec}).applyTo(s)
	if s.Status == walkie.StatusFailed {
		c.log.Warn("debate failed; the supervisor must look", zap.String("reason", s.Reason))
	}
}

// outcome is an attempt's effect on the control state.
type outcome struct {
	retries int // the agent's retry budget
	rec     TurnRecord
}

// applyTo clears the running attempt, adds the attempt's cost, and counts
// a failure against the turn's retries, setting the failed status once
// they are spent (at once for what no retry can fix). Halted and
// interrupted attempts were nobody's failure and do not count.
func (o *outcome) applyTo(s *walkie.State) {
	rec := o.rec
	s.Running = nil
	engine.Charge(s, rec.Usage)
	key := strconv.Itoa(rec.Turn)
	switch {
	case rec.Outcome == walkie.OutcomeAccepted:
		delete(s.Attempts, key)
	case !rec.Outcome.Counts():
	default:
		if s.Attempts == nil {
			s.Attempts = map[string]int{}
		}
		s.Attempts[key]++
		switch {
		case !rec.Outcome.Retryable():
			s.Status, s.Reason = walkie.StatusFailed, fmt.Sprintf("turn %d: %s", rec.Turn, walkie.Unretried(rec.Outcome, rec.Agent, rec.Detail))
		case s.Attempts[key] > o.retries:
			s.Status, s.Reason = walkie.StatusFailed, fmt.Sprintf("turn %d: %s: %s after %s (%s)", rec.Turn, rec.Agent, rec.Outcome, walkie.Count(s.Attempts[key], "attempt", "attempts"), rec.Detail)
		}
	}
}

// setStatus ends or stops the debate with status (Next's decision: over
// budget, deadlocked, …).
func (c *controller) setStatus(status, reason string) (*walkie.State, error) {
	st, _, err := walkie.UpdateState(c.file, walkie.OpStatus, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
		s.Status, s.Reason = status, reason
		return nil
	})
	return st, err
}
