package controller

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// recoverInterrupted cleans up after a controller that died mid-turn (it
// left state.Running set): it ends the old session's process group, makes
// the record whole again and logs the attempt once. A turn already stamped
// stays; a half-written one is discarded and will be run again. The
// attempt does not count against the turn's retries.
func (c *controller) recoverInterrupted() error {
	st, err := walkie.LoadState(c.dir)
	if err != nil || st.Running == nil {
		return err
	}
	a := st.Running
	if a.SessionPID > 0 {
		if err := session.KillStale(session.ProcIdentity{Pid: a.SessionPID, StartTicks: a.SessionStart}); err != nil {
			return fmt.Errorf("end the interrupted session (pid %d): %w", a.SessionPID, err)
		}
	}
	rec := TurnRecord{Turn: a.Turn, Agent: a.Agent, Role: "participant", Attempt: a.Number, Started: a.Started,
		Ended: time.Now().UTC(), Outcome: OutcomeInterrupted, EndedBy: session.EndedByController}
	rec.DurationMS = rec.Ended.Sub(rec.Started).Milliseconds()
	d, err := walkie.Load(c.file)
	if err != nil {
		return err
	}
	rec.Round = d.Meta.RoundOf(a.Turn)
	if d.Progress().Turns >= a.Turn {
		// The turn was stamped before the controller died.
		rec.Outcome, rec.Detail = OutcomeAccepted, "recorded before the controller stopped; found on restart"
		rec.Seq = d.Progress().Seq
	} else {
		snapshot, err := os.ReadFile(a.Snapshot)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the interrupted attempt's snapshot %s is gone; check the file with walkie verify", a.Snapshot)
		}
		if err != nil {
			return err
		}
		keep := walkie.KeepPath(c.dir, a.Turn, a.Agent, a.Number)
		s, err := walkie.Discard(c.file, snapshot, keep)
		if err != nil {
			return err
		}
		rec.Kept = rel(c.dir, s.Kept)
		rec.Detail = "the controller stopped mid-turn; the partial turn was discarded and the turn will run again"
	}
	if !loggedAttempt(c.dir, a.Turn, a.Number, a.Started) {
		if err := appendTurnLog(c.dir, rec); err != nil {
			return err
		}
	}
	c.log.Warn("recovered an interrupted attempt", zap.Int("turn", a.Turn), zap.String("agent", a.Agent),
		zap.Int("attempt", a.Number), zap.String("outcome", rec.Outcome))
	_, _, err = walkie.UpdateState(c.file, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
		s.Running = nil
		return nil
	})
	return err
}
