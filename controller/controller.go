package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/gitrepo/sshsig"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Options configure a controller run.
type Options struct {
	File string
	// Meta is File's front matter, when the caller has read it already;
	// nil: the run reads it.
	Meta   *walkie.Meta
	Config *config.Config
	// Cast maps a participant to the configured agent that plays it; a
	// participant not in the map is played by the agent of its own name.
	Cast map[string]string
	// MaxRounds, when positive, replaces the file's max_rounds for this
	// run (extensions from `walkie extend` still add to it).
	MaxRounds int
	// Once stops after one turn: accepted (or posted by a party walkie
	// does not run), or its retries spent. It stops before looking up who
	// plays the turn after it.
	Once bool
	// NoRetry makes at most one attempt, and a failed one leaves the
	// debate open, whatever the agent's retries say: the caller retries
	// (the cron tick's timed retry). An outcome that is never retried
	// (auth, a blocking prompt) still fails the debate.
	NoRetry bool
	// Wait, at the turn of a party walkie does not run (a participant with
	// no command: a person, a live session answering with walkie post),
	// waits for the record or the state to change, woken by the doorbell,
	// and goes on; without it the run returns, with Summary.Waiting set.
	Wait bool
	// CheckPricing says before the first turn (a note and a warning) which
	// agents' cost cannot be told from the config, and what to add.
	CheckPricing bool
	// WaitLimit, with Wait, is how long the run waits for one person's
	// turn (or any other wait for a person) before it gives up: it tells
	// the notify sinks (an escalation) and returns with
	// Summary.WaitExpired. 0 waits as long as it takes.
	WaitLimit time.Duration
	// Approve pins an unapproved briefing before the first turn, and a
	// round table's phase outputs as they are written (for CI).
	Approve bool
	Log     *zap.Logger
	Observe func(Event)
	// Acquire, when set, is called before every attempt's session starts
	// (each retry is a new session) with the configured agent's name; it
	// may wait, e.g. for the daemon's concurrency and rate limits. The
	// attempt begins only once it returns, and release is called after
	// the attempt is recorded. An error ends the run before anything of
	// the attempt is written.
	Acquire engine.AcquireFunc
	// Engine runs the sessions; a daemon shares one across its runs. Nil:
	// the run makes its own and closes it at the end.
	Engine *engine.Engine
	// Registry, when set, is the machine's registry of debates
	// (walkie.DefaultRegistry): the run notes the debate there, so that
	// walkie serve's fleet page shows it. By names who runs it there
	// ("walkie auto").
	Registry, By string
	// RunFile, when set, runs a round table's phase and reviewer sessions
	// on a remote engine's workers (roundtable.Host.RunFile); nil: with
	// Engine, here.
	RunFile func(ctx context.Context, fa engine.FileAttempt) (engine.FileResult, error)
	// TakeOver takes the debate back from a remote engine's home that is
	// gone for good (walkie auto --take-over): without it, a debate such
	// a home marked (HomeFile) is refused with a *HomedError.
	TakeOver bool
}

// Summary is how a run ended.
type Summary struct {
	// Standing is where the debate stands when the run returns (read
	// again after its last write), so the end of a run says what status,
	// show and the page say.
	Standing
	Interrupted bool // the run was cancelled (SIGINT/SIGTERM)
	// WaitExpired: the run gave up waiting for a person after
	// Options.WaitLimit; Waiting says for whom.
	WaitExpired bool
	Attempts    []TurnRecord // attempts made by this run
}

// Run drives a debate until it ends (or one turn, with Once): the loop of
// docs/controller.md ("A turn, step by step"). Each pass re-reads and verifies the record and the
// state, asks Next what should happen, and takes that one step: a turn, or
// for a round table the reviews of a round. Only one controller may run a
// debate at a time.
func Run(ctx context.Context, o Options) (sum Summary, err error) {
	c, err := newController(o)
	if err != nil {
		return Summary{}, err
	}
	defer c.close()
	// Before anything runs, in a run that would wait for people: a
	// misspelt agent must not pass for a person and be waited for in
	// vain. (A daemon or a cron tick, which never wait, show why such a
	// debate does not move: Next says so when its turn comes.)
	if o.Wait {
		if err := c.checkParticipants(); err != nil {
			return Summary{}, err
		}
	}
	// After the lock is let go (deferred below, so run before this): the
	// standing of a run that ended names no controller.
	defer func() {
		if err != nil {
			return // a record that stopped the run is not read again
		}
		if at, serr := c.standing(); serr == nil {
			sum.Standing = at
		}
	}()
	lock, err := walkie.TryRunLock(c.dir)
	if err != nil {
		return Summary{}, fmt.Errorf("run %s: %w", c.file, err)
	}
	defer lock.Unlock()
	if err := c.checkHome(); err != nil {
		return Summary{}, err
	}
	// Last: entries the run recorded without a turn of its own (a round
	// table's reviews, queued notes) become commits too (git: commit).
	defer c.commitRecord(ctx)
	c.register()
	defer c.activity.close()
	if err := c.recover(); err != nil {
		return Summary{}, err
	}
	if o.CheckPricing {
		c.notePricing()
	}
	startTurns := -1
	for {
		if c.table != nil {
			if err := c.table.Settle(); err != nil {
				return sum, err
			}
		}
		t, err := c.decide()
		if err != nil {
			return sum, err
		}
		sum.Status, sum.Reason, sum.Turns, sum.CostUSD = t.Status, t.reason, t.turns, t.cost
		sum.UnknownCosts, sum.UnknownUSD, sum.BudgetUSD, sum.Waiting = t.unknown, t.UnknownUSD, t.Budget, ""
		if startTurns < 0 {
			startTurns = t.turns
		}
		sum.Interrupted = ctx.Err() != nil
		switch {
		case t.Action == ActEnd:
			if err := c.closingNote(t); err != nil {
				c.log.Warn("the closing note was not recorded", zap.Error(err))
			}
			c.emit(Event{Kind: EventDebateEnded, Status: t.Status, Line: t.reason})
			return sum, nil
		case sum.Interrupted:
			return sum, nil
		case o.Once && t.turns > startTurns, o.NoRetry && len(sum.Attempts) > 0:
			// Done before the next party is even looked at: it may be
			// one walkie does not run.
			return sum, nil
		case t.Action == ActWait && t.Undeclared != nil && o.Wait:
			return sum, t.Undeclared // the config changed under the run
		case t.Action == ActWait:
			sum.Waiting = t.Why
			if !o.Wait {
				return sum, nil
			}
			if err := c.wait(ctx, t); errors.Is(err, errWaitExpired) {
				sum.WaitExpired = true
				return sum, nil
			} else if err != nil {
				return sum, err
			}
			continue
		case t.Action != ActRun:
			return sum, nil
		}
		recs, err := c.step(ctx, t)
		sum.Attempts = append(sum.Attempts, recs...)
		if err != nil && len(recs) == 0 && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// Interrupted before a session began (waiting for a slot
			// under the limits): nothing to record, as for a wait.
			sum.Interrupted = true
			return sum, nil
		}
		if errors.Is(err, ErrMovedOn) {
			c.log.Info("a turn was posted while the next one was being planned; deciding again", zap.Int("turn", t.Turn))
			continue
		}
		if err != nil {
			return sum, err
		}
	}
}

// recover makes the debate whole after a controller that died mid-turn,
// and reads what earlier runs did.
func (c *controller) recover() error {
	if err := c.recoverInterrupted(); err != nil {
		return fmt.Errorf("recover interrupted attempt: %w", err)
	}
	// A turn stamped by a controller that died before it logged it, or a
	// machine crash that lost the doorbell (never synced): both catch up
	// with the record, as the dead run would have.
	if caught, err := walkie.Reconcile(c.file); err != nil {
		return fmt.Errorf("recover the state of a stamped turn: %w", err)
	} else if caught {
		c.log.Warn("the log or the doorbell caught up with the record (a process or the machine stopped between two writes)")
	}
	if c.table != nil {
		if err := c.table.Recover(); err != nil {
			return fmt.Errorf("recover interrupted reviewers: %w", err)
		}
	}
	if err := c.countTries(); err != nil {
		return err
	}
	if _, err := walkie.FlushInbox(c.file); err != nil {
		return fmt.Errorf("record queued supervisor notes: %w", err)
	}
	return nil
}

// step runs what Next decided: one turn (with the round table's
// implementer prompt when it is the implementer's), or a round table's
// reviews.
func (c *controller) step(ctx context.Context, t *plan) ([]TurnRecord, error) {
	if c.table == nil {
		rec, err := c.turn(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("turn %d (%s): %w", t.Turn, t.Participant, err)
		}
		c.noteCost(rec, t.Budget)
		return []TurnRecord{rec}, nil
	}
	recs, done, err := c.tableStep(ctx, t)
	if done || err != nil {
		return recs, err
	}
	rt := tableTurn(t)
	prompt, err := c.table.ImplementerPrompt(rt)
	if err != nil {
		return nil, err
	}
	t.role, t.prompt = config.RoleImplementer, prompt
	if t.reach, err = c.table.ImplementerReach(rt); err != nil {
		return nil, err
	}
	rec, err := c.turn(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("turn %d (%s): %w", t.Turn, t.Participant, err)
	}
	return []TurnRecord{rec}, nil
}

// tableStep runs a round table's own step, when one comes before the
// turn t: a round's reviews (t is a reviewer's verdict turn), or the
// phases before the implementer's first turn. done is true when the step
// was all there was to do now; false when the implementer's turn follows.
func (c *controller) tableStep(ctx context.Context, t *plan) (recs []TurnRecord, done bool, err error) {
	rt := tableTurn(t)
	if err := c.table.CheckWorkspace(&t.meta); err != nil {
		return nil, true, err
	}
	if t.Participant != t.meta.Implementer {
		recs, err := c.table.Review(ctx, rt)
		if err != nil {
			return recs, true, fmt.Errorf("round %d review: %w", t.Round, err)
		}
		return recs, true, nil
	}
	if t.Round == 1 && len(t.meta.Phases) > 0 {
		// The phases come before the first implementer's turn: each runs
		// and is approved, or the loop looks again (halted, failed,
		// waiting for a person's approval).
		recs, ready, err := c.table.Phases(ctx, rt, c.opts.Approve)
		if err != nil || !ready {
			return recs, true, err
		}
	}
	return nil, false, nil
}

func tableTurn(t *plan) roundtable.Turn {
	return roundtable.Turn{Turn: t.Turn, Round: t.Round, RoundCap: t.RoundCap, Participant: t.Participant, Meta: t.meta}
}

// retries is how often a failed attempt of a's is retried in this run:
// not at all with NoRetry, whose caller retries, and a failure then never
// spends the debate's retries.
func (c *controller) retries(a config.Agent) int {
	if c.opts.NoRetry {
		return math.MaxInt
	}
	return a.Retries
}

// plan is the next turn to run: Next's decision, with what the loop adds.
type plan struct {
	Decision
	attempt int
	meta    walkie.Meta
	// role and prompt, when set, replace "participant" and the agent's
	// prompt template (the round table's implementer); reach is what its
	// sandbox opens besides a debater's.
	role, prompt string
	reach        session.Reach
	// ws is the git worktree the session runs in (workspace: worktree).
	ws *worktree
	// Where the debate stands before the turn.
	reason  string
	turns   int
	cost    float64
	unknown int // attempts of unknown cost
	// bell is when the doorbell last rang, as the decision saw it.
	bell time.Time
	// read is how the turn's agent is told to read the record.
	read reading
}

// decide reads and checks the record and the state, and asks Next what to
// do. A debate that cannot go on without a change of its record or its
// configuration is bad input.
func (c *controller) decide() (*plan, error) {
	// The doorbell first: a change after this look rings it again, so a
	// wait that starts from it misses nothing.
	var bell time.Time
	if sig, err := walkie.LoadSignal(c.dir); err == nil && sig != nil {
		bell = sig.UpdatedAt
	}
	// Both under the record lock, held for the two reads only: a post
	// beside them would otherwise be read half written (a torn tail), or
	// logged after its entry was read (a record that looks cut short).
	lock, err := walkie.LockRecord(c.dir)
	if err != nil {
		return nil, err
	}
	st, err := c.stateLog.State()
	var d *walkie.Doc
	if err == nil {
		d, _, err = c.load()
	}
	lock.Unlock()
	if err != nil {
		return nil, badInput(err)
	}
	if err := c.verify(d); err != nil {
		return nil, badInput(err)
	}
	p := d.Progress()
	if err := walkie.CheckAgainstState(c.file, p, st); err != nil {
		return nil, badInput(err)
	}
	if d.Meta.BriefingSHA256 == "" {
		// Pinned now (--approve) or refused: either way the record to
		// decide on is the one on disk after it.
		if err := c.checkBriefing(d); err != nil {
			return nil, err
		}
		if d, _, err = c.load(); err != nil {
			return nil, badInput(err)
		}
	}
	dec := Next(Look{Doc: d, State: st, Config: c.opts.Config, Cast: c.opts.Cast, MaxRounds: c.opts.MaxRounds, Now: time.Now()})
	if dec.Record {
		if st, err = c.setStatus(dec.Status, dec.Why); err != nil {
			return nil, err
		}
	}
	t := &plan{Decision: dec, attempt: c.tries[dec.Turn] + 1, meta: d.Meta, reason: st.Reason, turns: p.Turns, cost: st.CostUSD,
		unknown: st.UnknownCosts}
	if c.opts.MaxRounds > 0 {
		t.meta.MaxRounds = c.opts.MaxRounds
	}
	if dec.Action == ActEnd {
		t.reason = dec.Why
	}
	if dec.Action == ActRun {
		t.read = readingFor(d, dec.Participant)
	}
	t.bell = bell
	return t, nil
}

func (c *controller) agentFor(participant string) (config.Agent, error) {
	return agentFor(c.opts.Config, c.opts.Cast, participant)
}

// controller is one run's context.
type controller struct {
	opts Options
	file string // absolute
	dir  string // the debate's state directory
	log  *zap.Logger
	eng  *engine.Engine
	// ownEngine: eng was made for this run and is closed with it.
	ownEngine bool
	// table runs the round table's own steps; nil for a debate.
	table *roundtable.Table
	// tries is the highest attempt number logged per turn. Every attempt
	// gets a number of its own, and with it its own transcript and kept
	// file, even though halted and interrupted attempts do not count
	// against the retries (the state counts those).
	tries map[int]int
	// stateLog is the debate's log, kept open for the run: each read of
	// the state reads only what was appended since the last.
	stateLog *walkie.Log
	// haltLog is another, for halted, which a round table's reviewers
	// ask at once from their own goroutines.
	haltMu  sync.Mutex
	haltLog *walkie.Log
	// parsed is the record as last parsed from parsedRaw (see load).
	parsed    *walkie.Doc
	parsedRaw []byte
	// verified is the parse that last passed Verify (see verify).
	verified *walkie.Doc
	// activity keeps activity.json for pages in other processes.
	activity *activity
	// waitingFor is the turn the run last said it waits for, since
	// waitingSince.
	waitingFor   int
	waitingSince time.Time
	// signer signs the verdicts this controller stamps, for the merge
	// gate (WALKIE_SIGNING_KEY); nil signs nothing.
	signer *sshsig.Signer
	// gitHeld, once set, is why the record's commits stop: a session
	// changed the repository and not all of it could be put back, and
	// nothing is committed on top of what it moved.
	gitHeld error
}

// countTries reads the attempt numbers already used from the log. It
// reads the whole log, so a line damaged anywhere before a whole one
// stops the run here, before anything is changed (bad input, naming it).
func (c *controller) countTries() error {
	recs, err := ReadTurnLog(c.dir)
	if err != nil {
		return badInput(err)
	}
	c.tries = map[int]int{}
	for _, r := range recs {
		c.tries[r.Turn] = max(c.tries[r.Turn], r.Attempt)
	}
	return nil
}

func newController(o Options) (*controller, error) {
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	file, err := filepath.Abs(o.File)
	if err != nil {
		return nil, err
	}
	meta := o.Meta
	if meta == nil {
		m, err := walkie.ReadMeta(file)
		if err != nil {
			return nil, badInput(err)
		}
		meta = &m
	}
	c := &controller{opts: o, file: file, dir: walkie.StateDir(file, meta.ID), eng: o.Engine}
	c.stateLog, c.haltLog = walkie.OpenLog(c.dir), walkie.OpenLog(c.dir)
	if c.signer, err = sshsig.FromEnv(); err != nil {
		return nil, badInput(err)
	}
	c.log = o.Log.With(zap.String("debate", meta.ID))
	c.activity = newActivity(c.dir, os.Getpid(), c.log)
	if c.eng == nil {
		c.eng, c.ownEngine = engine.New(o.Config, o.Log), true
	}
	if meta.IsRoundtable() {
		c.table = roundtable.New(roundtable.Host{File: file, Dir: c.dir, Engine: c.eng, Log: c.log, Emit: c.emit,
			Agent: c.agentFor, Acquire: o.Acquire, Halted: c.halted, RunFile: o.RunFile,
			SetStatus: func(status, reason string) error { _, err := c.setStatus(status, reason); return err }})
	}
	return c, nil
}

// checkParticipants is CheckParticipants on the run's debate.
func (c *controller) checkParticipants() error {
	meta := c.opts.Meta
	if meta == nil {
		m, err := walkie.ReadMeta(c.file)
		if err != nil {
			return badInput(err)
		}
		meta = &m
	}
	return CheckParticipants(c.opts.File, meta, c.opts.Config, c.opts.Cast)
}

// close releases what the run holds.
func (c *controller) close() {
	if c.ownEngine {
		c.eng.Close()
	}
	c.stateLog.Close()
	c.haltLog.Close()
}

func (c *controller) emit(e Event) {
	c.activity.observe(e)
	if c.opts.Observe == nil {
		return
	}
	if e.File == "" {
		e.File = c.file
	}
	if e.Debate == "" {
		e.Debate = filepath.Base(c.dir)
	}
	c.opts.Observe(e)
}

// register notes the debate in the machine's registry, when asked. Only
// a page reads it, so a failure is logged and the run goes on.
func (c *controller) register() {
	if c.opts.Registry == "" {
		return
	}
	r := walkie.Registered{File: c.file, ID: filepath.Base(c.dir), PID: os.Getpid(), By: c.opts.By, Started: time.Now().UTC()}
	if err := walkie.Register(c.opts.Registry, r); err != nil {
		c.log.Debug("debate not noted in the registry; walkie serve's page will not list it", zap.Error(err))
	}
}

func (c *controller) halted() bool {
	c.haltMu.Lock()
	defer c.haltMu.Unlock()
	st, err := c.haltLog.State()
	return err == nil && st.Status == walkie.StatusHalted
}
