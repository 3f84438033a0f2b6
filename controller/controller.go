package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// Options configure a controller run.
type Options struct {
	File   string
	Config *config.Config
	// Cast maps a participant to the configured agent that plays it; a
	// participant not in the map is played by the agent of its own name.
	Cast map[string]string
	// MaxRounds, when positive, replaces the file's max_rounds for this
	// run (extensions from `walkie extend` still add to it).
	MaxRounds int
	// Once stops after one turn: accepted, or its retries spent.
	Once bool
	// Approve pins an unapproved briefing before the first turn (for CI).
	Approve bool
	Log     *zap.Logger
	Observe func(Event)
	// Acquire, when set, is called before every attempt's session starts
	// (each retry is a new session) with the configured agent's name; it
	// may wait, e.g. for the daemon's concurrency and rate limits. The
	// attempt begins only once it returns, and release is called after
	// the attempt is recorded. An error ends the run before anything of
	// the attempt is written.
	Acquire func(ctx context.Context, agent string) (release func(), err error)
}

// Summary is how a run ended.
type Summary struct {
	Status      string // the debate's status (walkie.Status*)
	Reason      string
	Interrupted bool         // the run was cancelled (SIGINT/SIGTERM)
	Attempts    []TurnRecord // attempts made by this run
	Turns       int          // turns in the record
	CostUSD     float64      // the debate's cost so far
}

// ErrBadInput marks errors in the debate or its configuration that no retry
// can fix: the record does not verify, an agent is not configured.
var ErrBadInput = errors.New("bad input")

// Run drives a debate until it ends (or one turn, with Once). Only one
// controller may run a debate at a time.
func Run(ctx context.Context, o Options) (sum Summary, err error) {
	c, err := newController(o)
	if err != nil {
		return Summary{}, err
	}
	defer c.close()
	lock, err := walkie.TryRunLock(c.dir)
	if err != nil {
		return Summary{}, fmt.Errorf("run %s: %w", c.file, err)
	}
	defer lock.Unlock()
	// Before the unlock: the last outcome is written while this run still
	// holds the debate, or the next controller would apply it too.
	defer func() {
		if ferr := c.flush(); ferr != nil && err == nil {
			err = ferr
		}
	}()
	if err := c.recoverInterrupted(); err != nil {
		return Summary{}, fmt.Errorf("recover interrupted attempt: %w", err)
	}
	c.countTries()
	if _, err := walkie.FlushInbox(c.file); err != nil {
		return Summary{}, fmt.Errorf("record queued supervisor notes: %w", err)
	}
	if IsRoundtable(c.file) {
		return c.runRoundtable(ctx) // docs/roundtable.md
	}
	startTurns := -1
	for {
		next, st, err := c.decide()
		if err != nil {
			return sum, err
		}
		sum.Status, sum.Reason, sum.Turns, sum.CostUSD = st.status, st.reason, st.turns, st.cost
		if startTurns < 0 {
			startTurns = st.turns
		}
		if next == nil || ctx.Err() != nil || (o.Once && st.turns > startTurns) {
			sum.Interrupted = ctx.Err() != nil
			if next == nil {
				c.emit(Event{Kind: EventDebateEnded, Status: st.status, Line: st.reason})
			}
			return sum, nil
		}
		rec, err := c.attempt(ctx, next)
		if err != nil {
			return sum, fmt.Errorf("turn %d (%s): %w", next.turn, next.participant, err)
		}
		sum.Attempts = append(sum.Attempts, rec)
		// The outcome goes into state.json with the next write: the next
		// attempt's start, or the flush when the run stops. That is one
		// synced write between two agents instead of two; decide sees the
		// outcome meanwhile, and a controller killed before the write
		// finds the attempt logged and applies it (recoverInterrupted).
		c.pending = &outcome{retries: next.agent.Retries, rec: rec}
	}
}

// plan is the next turn to run.
type plan struct {
	turn, round, attempt int
	participant          string
	agent                config.Agent
	roundCap             int
	meta                 walkie.Meta
	// role and prompt, when set, replace "participant" and the agent's
	// prompt template (the round table's implementer).
	role, prompt string
}

// standing is where the debate stands before a turn.
type standing struct {
	status, reason string
	turns          int
	cost           float64
}

// decide reads the record and the state and returns the next turn to
// run, or nil when the debate has ended.
func (c *controller) decide() (*plan, standing, error) {
	d, _, err := c.load()
	if err != nil {
		return nil, standing{}, badInput(err)
	}
	if err := d.Verify(); err != nil {
		return nil, standing{}, badInput(err)
	}
	st, err := walkie.LoadState(c.dir)
	if err != nil {
		return nil, standing{}, err
	}
	if c.pending != nil {
		c.pending.applyTo(st)
	}
	p := d.Progress()
	if err := walkie.CheckAgainstState(c.file, p, st); err != nil {
		return nil, standing{}, badInput(err)
	}
	if err := c.checkBriefing(d); err != nil {
		return nil, standing{}, err
	}
	m := d.Meta
	if c.opts.MaxRounds > 0 {
		m.MaxRounds = c.opts.MaxRounds
	}
	if budget := c.budget(&m); budget > 0 && st.CostUSD >= budget && st.Status == "" && !p.Converged {
		if st, err = c.setStatus(walkie.StatusOverBudget, fmt.Sprintf("spent $%.4f of a $%.2f budget", st.CostUSD, budget)); err != nil {
			return nil, standing{}, err
		}
	}
	s := standing{status: walkie.DebateStatus(&m, p, st), reason: st.Reason, turns: p.Turns, cost: st.CostUSD}
	if s.status == walkie.StatusMaxRounds {
		s.reason = fmt.Sprintf("reached the cap of %d rounds", walkie.RoundCap(&m, st))
	}
	if s.status != walkie.StatusOpen {
		return nil, s, nil
	}
	agent, err := c.agentFor(p.NextAgent)
	if err != nil {
		return nil, s, err
	}
	return &plan{turn: p.NextTurn, round: p.NextRound, attempt: c.tries[p.NextTurn] + 1,
		participant: p.NextAgent, agent: agent, roundCap: walkie.RoundCap(&m, st), meta: m}, s, nil
}

// applyPolicy updates the control state after t's attempt rec has been
// logged.
func (c *controller) applyPolicy(t *plan, rec TurnRecord) error {
	return c.applyOutcome(t.agent.Retries, rec)
}

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
// they are spent (at once for auth). Halted and interrupted attempts were
// nobody's failure and do not count.
func (o *outcome) applyTo(s *walkie.State) {
	rec := o.rec
	s.Running = nil
	if rec.Usage != nil {
		s.CostUSD += rec.Usage.CostUSD
	}
	key := strconv.Itoa(rec.Turn)
	switch rec.Outcome {
	case OutcomeAccepted:
		delete(s.Attempts, key)
	case OutcomeHalted, OutcomeInterrupted:
	default:
		if s.Attempts == nil {
			s.Attempts = map[string]int{}
		}
		s.Attempts[key]++
		switch {
		case rec.Outcome == OutcomeAuth:
			s.Status, s.Reason = walkie.StatusFailed, fmt.Sprintf("turn %d: %s is not logged in (%s); auth is never retried", rec.Turn, rec.Agent, rec.Detail)
		case !retryable(rec.Outcome):
			s.Status, s.Reason = walkie.StatusFailed, fmt.Sprintf("turn %d: %s is blocked (%s); a blocking prompt is never retried", rec.Turn, rec.Agent, rec.Detail)
		case s.Attempts[key] > o.retries:
			s.Status, s.Reason = walkie.StatusFailed, fmt.Sprintf("turn %d: %s: %s after %d attempts (%s)", rec.Turn, rec.Agent, rec.Outcome, s.Attempts[key], rec.Detail)
		}
	}
}

// retryable reports whether another attempt could end differently. Not
// for auth (no retry logs the CLI in) nor a blocking prompt (a trust
// dialog or a usage limit comes back every time): only a person can help.
func retryable(outcome string) bool {
	return outcome != OutcomeAuth && outcome != OutcomeBlockedPrompt
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

func (c *controller) budget(m *walkie.Meta) float64 {
	if m.BudgetUSD > 0 {
		return m.BudgetUSD
	}
	return c.opts.Config.BudgetUSD
}

func (c *controller) agentFor(participant string) (config.Agent, error) {
	name := participant
	if n, ok := c.opts.Cast[participant]; ok {
		name = n
	}
	a, err := c.opts.Config.Agent(name)
	if err != nil {
		return a, badInput(fmt.Errorf("participant %s: %w", participant, err))
	}
	return a, nil
}

func badInput(err error) error { return fmt.Errorf("%w: %w", ErrBadInput, err) }

// controller is one run's context.
type controller struct {
	opts Options
	file string // absolute
	dir  string // the debate's state directory
	log  *zap.Logger
	// tries is the highest attempt number logged per turn. Every attempt
	// gets a number of its own, and with it its own transcript and kept
	// file, even though halted and interrupted attempts do not count
	// against the retries (state.json counts those).
	tries map[int]int
	watch *fsnotify.Watcher // see watcher
	// pending is the last attempt's outcome until it is in state.json
	// (see Run).
	pending *outcome
	// parsed is the record as last parsed from parsedRaw (see load).
	parsed    *walkie.Doc
	parsedRaw []byte
}

// countTries reads the attempt numbers already used from the turn log. A
// damaged log costs only unique numbering, so it is reported, not fatal.
func (c *controller) countTries() {
	recs, err := ReadTurnLog(c.dir)
	if err != nil {
		c.log.Warn("turn log damaged; attempt numbers may repeat", zap.Error(err))
	}
	c.tries = map[int]int{}
	for _, r := range recs {
		c.tries[r.Turn] = max(c.tries[r.Turn], r.Attempt)
	}
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
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return nil, badInput(err)
	}
	c := &controller{opts: o, file: file, dir: walkie.StateDir(file, meta.ID)}
	c.log = o.Log.With(zap.String("debate", meta.ID))
	return c, nil
}

func (c *controller) emit(e Event) {
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
