package controller

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// recoverInterrupted cleans up after a controller that died mid-turn (the
// log has the attempt begun and not ended): it ends the old session's
// process group, makes the record whole again, and logs the attempt's
// end once, its policy applied in the same line. A turn already stamped
// stays; a half-written one is discarded, kept for inspection, and will be
// run again. The interrupted attempt does not count against the turn's
// retries.
func (c *controller) recoverInterrupted() error {
	st, err := c.stateLog.State()
	if err != nil || st.Running == nil {
		return err
	}
	a := st.Running
	if err := endSession(c.dir, a); err != nil {
		return err
	}
	tampered, err := c.removeWorktree(context.Background(), a)
	if err != nil {
		return err
	}
	retries := 0
	agent, agentErr := c.agentFor(a.Agent)
	if agentErr == nil {
		retries = agent.Retries
	}
	if rec, ok := engine.LoggedAttempt(c.dir, a.Turn, a.Number, a.Started); ok {
		// A layout-1 walkie died after logging the attempt in
		// turns.jsonl, before applying its policy (the log ends an
		// attempt and applies it in one line).
		c.log.Warn("finishing an attempt logged just before the controller stopped", zap.Int("turn", a.Turn),
			zap.String("agent", a.Agent), zap.Int("attempt", a.Number), zap.String("outcome", string(rec.Outcome)))
		return c.applyOutcome(retries, rec)
	}
	rec := TurnRecord{Turn: a.Turn, Agent: a.Agent, Role: "participant", Attempt: a.Number, Started: a.Started,
		Ended: time.Now().UTC(), Outcome: walkie.OutcomeInterrupted, EndedBy: session.EndedByController}
	rec.DurationMS = rec.Ended.Sub(rec.Started).Milliseconds()
	base := engine.TranscriptBase(c.dir, a.Turn, a.Agent, a.Number)
	if fi, err := os.Stat(base + ".log"); err == nil {
		rec.Transcript = Transcript{Raw: engine.Rel(c.dir, base+".log"), Text: engine.Rel(c.dir, base+".txt")}
		rec.Bytes = fi.Size()
		if agentErr == nil {
			rec.Usage = c.eng.Usage(agent, base+".txt")
		}
	}
	cur, err := readRecovering(c.file, a)
	if err != nil {
		return err
	}
	d, err := walkie.Parse(c.file, cur)
	if err != nil {
		return err
	}
	rec.Round = d.Meta.RoundOf(a.Turn)
	if d.Meta.Implementer != "" && a.Agent == d.Meta.Implementer {
		rec.Role = "implementer" // the round table's implementer runs as a turn
	}
	// A controller begins an attempt only while the debate is open.
	settled := &walkie.Settled{Before: walkie.StatusOpen}
	if p := d.Progress(); p.Turns >= a.Turn {
		// The turn was stamped before the controller died: the log now
		// records the record as it stands.
		rec.Outcome, rec.Detail, rec.Seq = walkie.OutcomeAccepted, "recorded before the controller stopped; found on restart", p.Seq
		settled.Progress = p
	} else {
		snapshot, err := restoreTarget(c.file, cur, a, st)
		if err != nil {
			return err
		}
		s, err := walkie.Discard(c.file, snapshot, walkie.KeepPath(c.dir, a.Turn, a.Agent, a.Number))
		if err != nil {
			return err
		}
		rec.Kept = engine.Rel(c.dir, s.Kept)
		rec.Detail = "the controller stopped mid-turn; the partial turn was discarded and the turn will run again"
		s.Before = walkie.StatusOpen
		settled = &s
	}
	if tampered != "" {
		rec.Detail += "; " + tampered
	}
	if err := c.logEnded(retries, rec, settled); err != nil {
		return err
	}
	c.log.Warn("recovered an interrupted attempt", zap.Int("turn", a.Turn), zap.String("agent", a.Agent),
		zap.Int("attempt", a.Number), zap.String("outcome", string(rec.Outcome)))
	return nil
}

// endSession ends every process of the attempt's session and removes its
// private HOME: by the pid of the process that leads it (the group and
// session it leads; walkie.SessionNote) and by its id, recorded before it
// started (whatever carries it, wherever it moved), so a controller killed
// before it learned the pid leaves nothing running either.
func endSession(dir string, a *walkie.Attempt) error {
	lead := session.ProcIdentity{Pid: a.SessionPID, StartTicks: a.SessionStart} // an older walkie's record
	if n := walkie.LoadSessionNote(dir, a.Session); n != nil {
		lead = session.ProcIdentity{Pid: n.Pid, StartTicks: n.StartTicks}
	}
	if lead.Pid > 0 {
		if err := session.KillStale(lead); err != nil {
			return fmt.Errorf("end the interrupted session (pid %d): %w", lead.Pid, err)
		}
	}
	if a.Session != "" {
		if err := session.Sweep(a.Session); err != nil {
			return fmt.Errorf("end the interrupted session %s: %w", a.Session, err)
		}
	}
	return nil
}

// Recover makes the debate in o.File whole after a controller that died
// mid-attempt, as a Run does before its first step, and returns whether
// there was such an attempt. It is for whoever watches a debate without
// running it (the daemon, the cron tick): a dead controller's attempt
// must be finished even when no turn follows it, when it ended the debate
// or the next party is a person. It does nothing while a controller holds
// the debate (that one recovers what needs it), and returns false.
func Recover(o Options) (bool, error) {
	// The cheap look first: this is called on every look at a debate.
	m, err := walkie.ReadMeta(o.File)
	if err != nil {
		return false, err
	}
	st, err := walkie.LoadState(walkie.StateDir(o.File, m.ID))
	if err != nil || st.Running == nil {
		return false, err
	}
	c, err := newController(o)
	if err != nil {
		return false, err
	}
	defer c.close()
	lock, err := walkie.TryRunLock(c.dir)
	if err != nil {
		if walkie.ControllerRunning(c.dir) {
			return false, nil
		}
		return false, fmt.Errorf("recover %s: %w", c.file, err)
	}
	defer lock.Unlock()
	// A remote home's attempt is the home's to settle, not a dead
	// controller's to recover.
	if err := c.checkHome(); err != nil {
		return false, err
	}
	if err := c.recover(); err != nil {
		return false, err
	}
	return true, nil
}
