package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// wait waits, at the turn of a party walkie does not run, for the record
// or the state to change: the party's post, a supervisor's note, a halt.
// Every such change rings the doorbell (signal.json) after it is on disk,
// so nothing polls. The party is told once per turn (EventWaiting, which
// notifiers send on).
func (c *controller) wait(ctx context.Context, t *plan) error {
	ch, err := c.eng.Watch(filepath.Join(c.dir, "signal.json"), filepath.Join(c.dir, walkie.LogFile), c.file)
	if err != nil {
		return fmt.Errorf("wait for %s's post: %w", t.Participant, err)
	}
	defer ch.Close()
	if c.waitingFor != t.Turn || c.waitingSince.IsZero() {
		c.waitingFor, c.waitingSince = t.Turn, time.Now()
		c.log.Info("waiting", zap.Int("turn", t.Turn), zap.String("participant", t.Participant), zap.String("why", t.Why))
		c.emit(Event{Kind: EventWaiting, Turn: t.Turn, Round: t.Round, Agent: t.Participant, Line: t.Why})
	}
	var expire <-chan time.Time
	if limit := c.opts.WaitLimit; limit > 0 {
		left := limit - time.Since(c.waitingSince)
		if left <= 0 {
			return c.giveUpWaiting(t, limit)
		}
		timer := time.NewTimer(left)
		defer timer.Stop()
		expire = timer.C
	}
	// Rung between the look and the watch: look again at once.
	if sig, err := walkie.LoadSignal(c.dir); err == nil && sig != nil && !sig.UpdatedAt.Equal(t.bell) {
		return nil
	}
	select {
	case <-ch.C():
	case <-expire:
		// Looked at once more first: the post may have landed as the
		// time ran out.
		return nil
	case <-ctx.Done():
	}
	return nil
}

// errWaitExpired is the end of a wait for a person that ran past
// Options.WaitLimit.
var errWaitExpired = errors.New("gave up waiting for a person")

// giveUpWaiting tells the supervisor that the run stops waiting for the
// person t waits for, and ends the wait.
func (c *controller) giveUpWaiting(t *plan, limit time.Duration) error {
	line := fmt.Sprintf("gave up waiting after %s: %s", limit, t.Why)
	c.log.Warn("gave up waiting for a person", zap.Int("turn", t.Turn), zap.String("participant", t.Participant), zap.Duration("wait_limit", limit))
	c.emit(Event{Kind: EventEscalation, Turn: t.Turn, Round: t.Round, Agent: t.Participant, Line: line})
	return errWaitExpired
}

// notePricing says, before the first turn, which agents' cost cannot be
// told, and how to make it so.
func (c *controller) notePricing() {
	meta, err := walkie.ReadMeta(c.file)
	if err != nil {
		return // the loop reports it
	}
	var seen []string
	for _, p := range meta.Participants {
		a, err := c.agentFor(p)
		if err != nil || slices.Contains(seen, a.Name) {
			continue // a party walkie does not run costs nothing here
		}
		seen = append(seen, a.Name)
		if why := engine.Unpriced(c.opts.Config, a); why != "" {
			if budgetOf(&meta, c.opts.Config) > 0 {
				why += fmt.Sprintf("; the budget counts each such attempt as the costliest known one, and at least %d%% of the budget", int(UnknownShare*100))
			}
			if c.opts.Config.Limits.PerAgentDailyUSD[a.Name] > 0 {
				why += "; limits.per_agent_daily_usd counts only known costs, so it does not hold " + a.Name + " back"
			}
			c.log.Warn("cost cannot be told", zap.String("agent", a.Name), zap.String("fix", why))
			c.emit(Event{Kind: EventNote, Agent: a.Name, Line: why})
		}
	}
}

// noteCost logs an attempt whose cost is not known while a budget is set:
// the budget counts it as an estimate, and a person should know.
func (c *controller) noteCost(rec TurnRecord, budget float64) {
	if _, complete := rec.Usage.Cost(); complete || budget == 0 {
		return
	}
	source := "the agent reports no usage"
	if rec.Usage != nil {
		source = rec.Usage.CostSource
	}
	c.log.Warn("attempt of unknown cost; the budget counts it as an estimate", zap.Int("turn", rec.Turn), zap.String("agent", rec.Agent),
		zap.Int("attempt", rec.Attempt), zap.String("cost_source", source))
}

// closingNote writes into the record, once per ending, why walkie ended a
// debate at a limit (its round cap, its budget): a supervisor note a
// reader of the record finds where the debate stops, with what would let
// it go on. Other endings say it themselves (the sign-offs, a person's
// halt) or are for the supervisor to decide (failed).
func (c *controller) closingNote(t *plan) error {
	// A round table writes its own notes, in its own terms (roundtable).
	if c.table != nil || t.Status != walkie.StatusMaxRounds && t.Status != walkie.StatusOverBudget {
		return nil
	}
	st, err := c.stateLog.State()
	if err != nil || st.ClosedAt >= max(t.turns, 1) {
		return err
	}
	at, err := c.standing()
	if err != nil {
		return err
	}
	var b strings.Builder
	switch t.Status {
	case walkie.StatusMaxRounds:
		fmt.Fprintf(&b, "walkie: the debate ended at its round cap of %d, after %s, without every participant signing off.", at.RoundCap, walkie.Count(at.Turns, "turn", "turns"))
		if len(at.Signed) > 0 {
			fmt.Fprintf(&b, " Signed off on the proposal as it stands: %s.", strings.Join(at.Signed, ", "))
		}
		fmt.Fprintf(&b, "\n\nTo go on: walkie extend %s --rounds N, then walkie auto %s.\n", filepath.Base(c.file), filepath.Base(c.file))
	case walkie.StatusOverBudget:
		fmt.Fprintf(&b, "walkie: the debate stopped over its budget: %s.\n\nTo go on: raise budget_usd, then walkie resume %s and walkie auto %s.\n", t.reason, filepath.Base(c.file), filepath.Base(c.file))
	}
	// Marked first: a crash in between loses the note rather than
	// writing it twice into a record that keeps everything.
	if _, _, err := walkie.UpdateState(c.file, walkie.OpClosing, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
		s.ClosedAt = max(at.Turns, 1)
		return nil
	}); err != nil {
		return err
	}
	_, err = walkie.Append(c.file, walkie.Post{Supervisor: true, Body: []byte(b.String())})
	return err
}
