package controller

import (
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// applyOutcome writes an attempt's outcome into the control state.
func (c *controller) applyOutcome(retries int, rec TurnRecord) error {
	_, err := c.updateState(func(_ *walkie.Doc, _ []byte, s *walkie.State) error {
		(&outcome{retries: retries, rec: rec}).applyTo(s)
		if s.Status == walkie.StatusFailed {
			c.log.Warn("debate failed; the supervisor must look", zap.String("reason", s.Reason))
		}
		return nil
	})
	return err
}

// outcome is a logged attempt whose effect on the control state is still
// to be written.
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

// flush writes the pending outcome, if any. With the attempt no longer
// running, supervisor notes posted meanwhile are no longer queued; those
// already queued are appended now rather than at the next run.
func (c *controller) flush() error {
	o := c.pending
	if o == nil {
		return nil
	}
	c.pending = nil
	if err := c.applyOutcome(o.retries, o.rec); err != nil {
		return err
	}
	_, err := walkie.FlushInbox(c.file)
	return err
}

// setStatus ends the debate with status, in one write with the pending
// outcome: the state it returns (and the summary made from it) then holds
// the last attempt's cost too.
func (c *controller) setStatus(status, reason string) (*walkie.State, error) {
	o := c.pending
	st, _, err := walkie.UpdateState(c.file, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
		if o != nil {
			o.applyTo(s)
		}
		s.Status, s.Reason = status, reason
		return nil
	})
	if err != nil || o == nil {
		return st, err
	}
	c.pending = nil
	_, err = walkie.FlushInbox(c.file)
	return st, err
}
