package controller

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// turn runs one attempt at a turn and records it: snapshot, session,
// judge, settle, log, doorbell.
func (c *controller) turn(ctx context.Context, t *plan) (rec TurnRecord, err error) {
	// Acquire before begin: waiting for a slot is not a turn in progress,
	// so a controller that dies while waiting leaves nothing to recover.
	if c.opts.Acquire != nil {
		release, err := c.opts.Acquire(ctx, t.Agent.Name)
		if err != nil {
			return TurnRecord{}, err
		}
		// Given back with what the session cost: the ledger's spending.
		defer func() { release(rec.Usage.Spent()) }()
	}
	want, err := c.review(ctx, t)
	if err != nil {
		return TurnRecord{}, err
	}
	// The session's id goes into the state with the attempt, before the
	// agent can fork: a controller killed at any moment after leaves what
	// the next one needs to end every process the session started. Its
	// worktree, if it has one, goes in too, before it is made.
	id := session.NewID()
	snapshot, started, err := c.begin(t, id)
	if err != nil {
		return TurnRecord{}, err
	}
	at, err := c.turnAttempt(t, snapshot, started, id)
	if err == nil && t.ws != nil {
		defer t.ws.finish(ctx) // on every way out; a no-op once finished in settle
		defer c.restoreRepo(ctx, t)
		at.Dir, at.Env = t.ws.path, t.ws.env()
		at.Reach.Write = append(at.Reach.Write, engine.WorktreeReach(t.ws.path, t.ws.repo.Root).Write...)
		err = t.ws.create(ctx)
	}
	if err != nil {
		return TurnRecord{}, c.abandon(snapshot, err)
	}
	res, err := c.eng.RunTurn(ctx, at)
	if err != nil {
		return TurnRecord{}, c.abandon(snapshot, err)
	}
	return c.settle(ctx, t, started, snapshot, res, want)
}

// settle judges an attempt's result against the snapshot and records it:
// stamp or restore, classify, the log's line (the attempt's record and its
// outcome), queued notes, the event. It is
// the one path for a result, whether the session ran here or on a remote
// worker (Home.Settle); res's transcripts are in the state directory, and
// want is what the judge expects of the turn (its refs resolved).
func (c *controller) settle(ctx context.Context, t *plan, started time.Time, snapshot []byte, res engine.Result, want walkie.Expect) (TurnRecord, error) {
	rec := TurnRecord{Turn: t.Turn, Round: t.Round, Agent: t.Participant, Role: cmp.Or(t.role, "participant"), Attempt: t.attempt, Started: started}
	res.Fill(&rec, c.dir)
	if rec.Usage == nil || rec.Usage.InputTokens == 0 {
		rec.SentBytes = int64(rec.PromptBytes + len(snapshot))
	}
	// A turn in a worktree kept its CLI's own instructions (engine.TurnAttempt).
	rec.BudgetInputTokens = t.Agent.TurnBudget(sessionRole(t.role), t.ws != nil, rec.PromptBytes, len(snapshot))
	// The session is over. First, before walkie runs git there again,
	// what it changed in the repository outside its branches is put
	// back, and voids the turn whatever it wrote.
	if found := c.restoreRepo(ctx, t); found != "" {
		want.Tampered = found
	}
	// Its worktree goes, and what it committed there comes back as a
	// branch the turn cites.
	var err error
	if want.Extra, err = t.ws.finish(ctx); err != nil {
		return rec, c.abandon(snapshot, fmt.Errorf("turn %d's worktree: %w", t.Turn, err))
	}
	if want.Extra != nil {
		rec.Branch = want.Extra.String()
	}
	if c.parsed != nil && bytes.Equal(c.parsedRaw, snapshot) {
		want.Before = c.parsed // begin parsed these very bytes
	}
	var checked string // the evidence walkie checked, for an accepted turn's detail
	if res.Stop == "" {
		checked, want.Refuse = c.evidence(ctx, t, snapshot, want)
	}
	keep := walkie.KeepPath(c.dir, t.Turn, t.Participant, t.attempt)
	var settled walkie.Settled
	if res.Stop != "" { // halted or interrupted: the attempt is void whatever it wrote
		settled, err = walkie.Discard(c.file, snapshot, keep)
	} else {
		settled, err = walkie.Settle(c.file, snapshot, want, keep)
	}
	if err != nil {
		return rec, fmt.Errorf("settle: %w", err)
	}
	// The next look at the record reads these bytes: no need to parse
	// them again (load compares them byte for byte).
	c.parsed, c.parsedRaw, c.verified = settled.Doc, settled.Raw, nil
	if err := t.ws.prune(ctx, settled.Entry); err != nil {
		c.log.Warn("the branch of a worktree that got no commits was not deleted", zap.Error(err))
	}
	rec.Outcome, rec.Detail = classify(res, settled)
	if checked != "" && rec.Outcome == walkie.OutcomeAccepted {
		rec.Detail += "; " + checked
	}
	rec.Signed = rec.Outcome == walkie.OutcomeAccepted && settled.Signed
	rec.Kept = engine.Rel(c.dir, settled.Kept)
	if settled.Entry != nil {
		rec.Seq = settled.Entry.Seq
	}
	if err := c.logEnded(c.retries(t.Agent), rec, &settled); err != nil {
		return rec, err
	}
	c.tries[t.Turn] = max(c.tries[t.Turn], t.attempt)
	if rec.Outcome == walkie.OutcomeAccepted && settled.Entry != nil && settled.Entry.Type == walkie.TypeVerdict {
		c.signStamped(ctx, settled.Entry.Seq)
	}
	if _, err := walkie.FlushInbox(c.file); err != nil {
		c.log.Warn("queued supervisor notes not recorded", zap.Error(err))
	}
	c.commitRecord(ctx)
	if c.gitHeld != nil {
		return rec, c.gitHeld
	}
	c.log.Info("turn recorded", zap.Int("turn", t.Turn), zap.String("agent", t.Participant), zap.String("outcome", string(rec.Outcome)),
		zap.String("detail", rec.Detail), zap.Int64("duration_ms", rec.DurationMS), zap.Int64("output_bytes", rec.Bytes))
	c.emit(Event{Kind: EventTurnRecorded, Turn: t.Turn, Round: t.Round, Agent: t.Participant, Attempt: t.attempt, Record: &rec, Status: settled.Status})
	return rec, nil
}

// restoreRepo puts back what t's worktree session changed in the
// repository outside its branches, reports it, and returns it as the
// turn's tampered detail ("" when nothing). What cannot be put back stops
// the record's commits (gitHeld). A no-op once done.
func (c *controller) restoreRepo(ctx context.Context, t *plan) string {
	detail, err := t.ws.restore(ctx)
	if err != nil {
		detail += " (" + err.Error() + ")"
		c.gitHeld = fmt.Errorf("turn %d: %s: nothing more is committed over it; look at the repository, then run the debate again", t.Turn, detail)
	}
	if detail != "" {
		c.log.Warn("a worktree session changed the repository", zap.Int("turn", t.Turn), zap.String("agent", t.Participant), zap.String("detail", detail))
		c.emit(Event{Kind: EventNote, Line: fmt.Sprintf("turn %d: %s", t.Turn, detail)})
	}
	return detail
}

// turnAttempt is the engine's attempt for t: the agent's pinned prompt
// (or the round table's), the record as the file it writes, the state file
// for halts.
func (c *controller) turnAttempt(t *plan, snapshot []byte, started time.Time, id string) (engine.TurnAttempt, error) {
	prompt := t.prompt
	if prompt == "" {
		var err error
		prompt, err = c.opts.Config.RenderPrompt(t.Agent.Prompt, promptData(t, c.file))
		if err != nil {
			return engine.TurnAttempt{}, badInput(fmt.Errorf("prompt for %s: %w", t.Participant, err))
		}
	}
	at := engine.TurnAttempt{
		File: c.file, Before: snapshot, Turn: t.Turn, Round: t.Round, Attempt: t.attempt, Participant: t.Participant,
		Agent: t.Agent.ForRole(sessionRole(t.role)), Prompt: prompt, StateDir: c.dir, ID: id,
		Role: t.role, Reach: t.reach,
		Control: filepath.Join(c.dir, walkie.LogFile),
		Halted:  c.halted,
		Started: func(s *session.Session) {
			c.noteSession(s, id)
			// Announced once the agent is running: a command that cannot
			// start is a configuration error, not a turn that started and
			// never ended.
			c.emit(Event{Kind: EventTurnStarted, Turn: t.Turn, Round: t.Round, Agent: t.Participant, Attempt: t.attempt, Started: started})
			c.log.Info("turn started", zap.Int("turn", t.Turn), zap.Int("round", t.Round), zap.String("agent", t.Participant), zap.Int("attempt", t.attempt))
		},
	}
	// A review thread's participants review the repository it is bound
	// to: they read it, every debate's record and state in it hidden.
	if repo := t.meta.RepoDir(c.file); repo != "" {
		rr := engine.RepoReach(repo, c.file)
		at.Reach.Read = append(slices.Clone(at.Reach.Read), rr.Read...)
		at.Reach.Hide = append(slices.Clone(at.Reach.Hide), rr.Hide...)
	}
	// Always: activity.json shows what the agent is doing to a page in
	// another process, whether or not this run has an observer.
	at.Output = func(line string) {
		c.emit(Event{Kind: EventOutput, Turn: t.Turn, Round: t.Round, Agent: t.Participant, Attempt: t.attempt, Started: started, Line: line})
	}
	return at, nil
}

// promptData fills the turn's prompt template; file is where the agent
// finds the record: the record itself, or a worker's copy of it.
func promptData(t *plan, file string) config.PromptData {
	d := config.PromptData{Agent: t.Participant, File: file, Turn: t.Turn, Round: t.Round,
		MaxRounds: t.RoundCap, Participants: t.meta.Participants}
	t.read.fill(&d)
	return d
}

// sessionRole is the role a turn's session plays: a debate turn, or a
// round table's implementer (role is what the attempt's record says).
func sessionRole(role string) string {
	if role == config.RoleImplementer {
		return config.RoleImplementer
	}
	return config.RoleDebater
}

// ErrMovedOn is begin's answer (and Home.Begin's) when a turn was
// recorded between the decision and the attempt: a participant's own
// post, accepted between two attempts (docs/format.md). Nothing has
// begun; the loop, or the Temporal workflow, decides again.
var ErrMovedOn = errors.New("the record moved on while the turn was being planned")

// begin snapshots the file and logs the attempt as begun (running), so
// that a controller killed from here on is cleaned up after by the next
// one: the line is synced before the session starts. Both happen under the
// record lock: a supervisor note posted at the same moment is either in
// the snapshot or queued until the turn is recorded, never lost when a
// rejected turn is undone.
func (c *controller) begin(t *plan, sessionID string) ([]byte, time.Time, error) {
	path := filepath.Join(c.dir, "snapshot.md")
	started := time.Now().UTC().Truncate(time.Millisecond)
	var snapshot []byte
	_, err := c.updateState(walkie.OpBegun, func(d *walkie.Doc, raw []byte, s *walkie.State) error {
		p := d.Progress()
		if p.Turns != t.Turn-1 {
			return ErrMovedOn
		}
		// Unsynced: readSnapshot checks it against the state after a
		// machine crash.
		if err := walkie.RewriteUnsynced(path, raw, 0o600); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		snapshot = raw
		s.Running = &walkie.Attempt{Turn: t.Turn, Agent: t.Participant, Number: t.attempt, Started: started,
			ControllerPID: os.Getpid(), Snapshot: path, Size: int64(len(raw)), Seq: p.Seq, Hash: p.Hash, Session: sessionID}
		s.Running.Worktree, s.Running.WorktreeRepo = t.ws.pathOrEmpty()
		return nil
	})
	return snapshot, started, err
}

// abandon clears a running attempt that never got an agent going: the
// record back to the snapshot, and the attempt no longer running, in one
// line of the log.
func (c *controller) abandon(snapshot []byte, cause error) error {
	o := walkie.StateChange{Op: walkie.OpAbandoned}
	if s, err := walkie.Discard(c.file, snapshot, ""); err == nil {
		o.Settled = &s
	}
	_, _ = c.changeState(o, func(_ *walkie.Doc, _ []byte, s *walkie.State) error {
		s.Running = nil
		return nil
	})
	return cause
}

// noteSession records the session's process identity, so a controller
// that dies now leaves enough to end the whole session (walkie.SessionNote).
func (c *controller) noteSession(s *session.Session, sessionID string) {
	id, err := session.Identify(s.Pid())
	if err != nil {
		c.log.Warn("cannot identify the session's process", zap.Int("pid", s.Pid()), zap.Error(err))
		return
	}
	if err := walkie.NoteSession(c.dir, walkie.SessionNote{Session: sessionID, Pid: id.Pid, StartTicks: id.StartTicks}); err != nil {
		c.log.Warn("cannot record the session's process", zap.Error(err))
	}
}

// classify names the attempt's outcome from what the session did and what
// the judge found in the file. A valid turn counts whatever the exit code;
// tampering is reported before anything else, since the file was restored.
func classify(res engine.Result, s walkie.Settled) (walkie.Outcome, string) {
	if out, detail, ok := engine.Stopped(res.Stop, "attempt"); ok {
		return out, detail
	}
	v := s.Verdict
	switch v.Outcome {
	case walkie.VerdictAccepted:
		d := "turn recorded"
		if v.Stamped {
			d = "turn posted with walkie post"
		}
		return walkie.OutcomeAccepted, engine.EndedAfterGrace(res.Result, d, "agent")
	case walkie.VerdictTampered:
		return walkie.OutcomeTampered, v.Detail + "; the file was restored"
	}
	if out, detail, ok := engine.Failure(res.Result, "turn"); ok {
		return out, res.Explain(detail)
	}
	if v.Outcome == walkie.VerdictMalformed {
		return walkie.OutcomeMalformed, res.Explain(v.Detail)
	}
	return walkie.OutcomeNoTurn, res.Explain(cmp.Or(v.Detail, "no new turn was written"))
}
