package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// Home is the side of a debate that owns its files, for an engine that
// runs the agents' sessions somewhere else (a Temporal worker, see
// controller/temporal). It decides the next turn, begins an attempt and
// settles the attempt's result through the same code as the local loop,
// so a turn is snapshotted, judged, stamped and logged the same way
// wherever its agent ran. The caller holds the debate's run lock
// (walkie.TryRunLock) from Decide to Settle, as Run does.
//
// A Home holds nothing between calls that a restart would lose: open one
// for each call.
type Home struct{ c *controller }

// Step is what Home.Decide says should happen now.
type Step struct {
	Decision
	// Attempt is the attempt number the next turn gets.
	Attempt int
	// Prompt fills the agent's prompt template, with File left empty: it
	// is where the agent finds the record, which only the machine that
	// runs the agent knows.
	Prompt config.PromptData
	// Table, for a round table, says that its own step comes now instead
	// of a turn: the phases, or a round's reviews (Home.Table runs it).
	Table bool
	// Implementer, for a round table's implementer turn, fills its prompt
	// (the round table's implementer template) with this machine's paths:
	// the machine that runs the agent puts in its own.
	Implementer *config.ImplementerPromptData
}

// TurnRef names one attempt at a turn: what Begin and Settle need of a
// Step, small enough to travel.
type TurnRef struct {
	Turn, Round int
	Participant string
	Attempt     int
	// Started is when Begin began the attempt: with Turn and Attempt, the
	// key under which the attempt is running and is logged.
	Started time.Time
}

// ErrStale refuses a result for an attempt that is no longer the running
// one: a controller that started meanwhile recovered it (and logged it as
// interrupted), so the turn is run again and this result is not recorded.
var ErrStale = errors.New("the attempt is no longer running")

// OpenHome opens the debate in o.File for the calls of a remote engine.
// A round table's own steps run their sessions with o.RunFile.
func OpenHome(o Options) (*Home, error) {
	c, err := newController(o)
	if err != nil {
		return nil, err
	}
	if err := c.countTries(); err != nil {
		c.close()
		return nil, err
	}
	return &Home{c: c}, nil
}

// Close releases what the Home holds.
func (h *Home) Close() { h.c.close() }

// File is the record's absolute path; Dir its state directory.
func (h *Home) File() string { return h.c.file }

// Dir is the debate's state directory.
func (h *Home) Dir() string { return h.c.dir }

// Decide makes the debate whole after a controller that died mid-turn,
// then reads and checks the record and the state and says what should
// happen now: what the loop does before every step.
func (h *Home) Decide() (Step, error) {
	if err := h.c.recover(); err != nil {
		return Step{}, err
	}
	if h.c.table != nil {
		// The loop's first look on every pass: a round complete in the
		// record is decided before anything else.
		if err := h.c.table.Settle(); err != nil {
			return Step{}, err
		}
	}
	t, err := h.c.decide()
	if err != nil {
		return Step{}, err
	}
	step := Step{Decision: t.Decision, Attempt: t.attempt, Prompt: promptData(t, "")}
	if h.c.table == nil || t.Action != ActRun {
		return step, nil
	}
	rt := tableTurn(t)
	if err := h.c.table.CheckWorkspace(&t.meta); err != nil {
		return Step{}, err
	}
	pending, err := h.c.table.PhasesPending(rt)
	if err != nil {
		return Step{}, err
	}
	if t.Participant != t.meta.Implementer || pending {
		step.Table = true
		return step, nil
	}
	data, err := h.c.table.ImplementerPromptData(rt)
	if err != nil {
		return Step{}, err
	}
	step.Implementer = &data
	return step, nil
}

// Table runs the round table's own step that Decide said comes now
// instead of the turn r (Step.Table), as the loop runs it: the phases
// (each run and, unless approved, waited for), or round r.Round's reviews
// (freeze, grader, the reviewers at once, their verdicts into the
// record). The sessions run with the Options' RunFile. It returns the
// attempts it recorded; nothing when the debate moved on since Decide.
func (h *Home) Table(ctx context.Context, r TurnRef) ([]TurnRecord, error) {
	if h.c.table == nil {
		return nil, badInput(fmt.Errorf("%s is not a round table", h.c.file))
	}
	t, err := h.c.decide()
	if err != nil {
		return nil, err
	}
	if t.Action != ActRun || t.Turn != r.Turn || t.Participant != r.Participant {
		return nil, nil
	}
	recs, _, err := h.c.tableStep(ctx, t)
	return recs, err
}

// WorkspaceFiles is the round table's workspace as a freeze lists it:
// its root and its files, for the machine that runs the implementer's
// session elsewhere.
func (h *Home) WorkspaceFiles(ctx context.Context) (root string, paths []string, err error) {
	if h.c.table == nil {
		return "", nil, nil
	}
	m, err := walkie.ReadMeta(h.c.file)
	if err != nil {
		return "", nil, err
	}
	return h.c.table.WorkspaceFiles(ctx, &m)
}

// Began is a begun attempt: the snapshot (the bytes the agent starts
// from), the attempt's start, and the worktree its session runs in when
// the turn asks for one.
type Began struct {
	Snapshot []byte
	Started  time.Time
	Worktree *Worktree
}

// Worktree is the git worktree a remote turn's session runs in
// (workspace: worktree): the home resolves where it starts, as the loop
// does, and the worker makes it in its own clone of the repository.
type Worktree struct {
	// Branch is the turn's branch (walkie/ID/turn-N); Start the full sha
	// it starts at.
	Branch, Start string
	// Roots are the first commits of Start's history: every clone of the
	// repository has them, so they tell a worker which clone is this
	// repository's.
	Roots []string
	// Origin is the home repository's origin URL, "" without one: for
	// messages only.
	Origin string
}

// Commits is what a remote worktree session committed: its branch's head
// and the commits since Start as a git bundle (nil when Head is Start).
type Commits struct {
	Branch, Start, Head string
	Bundle              []byte
	// Tampered is what the session changed in the worker's clone outside
	// its branches (put back there): the turn is tampered.
	Tampered string `json:",omitempty"`
}

// Begin snapshots the record and marks the attempt as running, as the
// loop's begin does, and resolves the turn's worktree if it runs in one.
// Called again for the same attempt, it begins it again: nothing of it
// has been recorded yet.
func (h *Home) Begin(r TurnRef) (Began, error) {
	t, err := h.plan(r)
	if err != nil {
		return Began{}, err
	}
	ctx := context.Background() // git, briefly: resolving the start
	d, _, err := h.c.load()
	if err != nil {
		return Began{}, err
	}
	// Resolved before the attempt is marked running: a turn that cannot
	// have its worktree is bad input, with nothing to undo.
	ws, err := h.c.worktreeFor(ctx, t, d)
	if err != nil {
		return Began{}, err
	}
	var wt *Worktree
	if ws != nil {
		roots, err := ws.repo.Roots(ctx, ws.start)
		if err != nil {
			return Began{}, err
		}
		wt = &Worktree{Branch: ws.branch, Start: ws.start, Roots: roots, Origin: ws.repo.Origin(ctx)}
	}
	// No session of this machine's, and no worktree: the worker's
	// session carries its own id and runs in the worker's clone, and the
	// worker ends and removes what a dead one of its own left behind.
	snapshot, started, err := h.c.begin(t, "")
	return Began{Snapshot: snapshot, Started: started, Worktree: wt}, err
}

// Remote is how a remote attempt went, as Settle records it.
type Remote struct {
	// After is the file as the agent left it (nil: it was gone); Session
	// how its session went, with its transcripts already in the state
	// directory.
	After   []byte
	Session engine.Result
	// Commits, for a turn that ran in a worktree, is what its session
	// committed there.
	Commits *Commits
	// Land, for a round table's implementer, puts what the session did to
	// its copy of the workspace into the workspace here. Settle calls it
	// only for the running attempt, before the turn is judged; after a
	// crash, again.
	Land func() error
}

// Settle records the result of the running attempt r (out). It judges, stamps or
// restores and logs exactly as the loop does, then applies the attempt's
// outcome (retries, failed, cost) at once. Settle may be called again for
// the same attempt, after a crash anywhere inside it: an attempt already
// logged or stamped is finished, never recorded twice; the result must
// be the same each time (res.Ended tells them apart). An attempt no
// longer running, and not settled with this result, gives ErrStale.
//
// out.Commits, for a turn that ran in a worktree, is what its session
// committed there: it becomes the turn's branch in the home's repository
// before the turn is judged, and the turn is settled as the loop settles
// a worktree turn (the branch in the turn record, the ref added to the
// turn).
func (h *Home) Settle(r TurnRef, out Remote) (TurnRecord, error) {
	c := h.c
	after, res, commits := out.After, out.Session, out.Commits
	st, err := c.stateLog.State()
	if err != nil {
		return TurnRecord{}, err
	}
	if !h.running(st, r) {
		// Settled by an earlier call: the attempt is logged as this result
		// says it ended. Logged otherwise, a controller recovered it.
		if rec, ok := engine.LoggedAttempt(c.dir, r.Turn, r.Attempt, r.Started); ok && rec.Ended.Equal(res.Ended.UTC().Truncate(time.Millisecond)) {
			return rec, nil
		}
		return TurnRecord{}, fmt.Errorf("turn %d attempt %d: %w", r.Turn, r.Attempt, ErrStale)
	}
	d, err := walkie.Load(c.file)
	if err != nil {
		return TurnRecord{}, err
	}
	if _, logged := engine.LoggedAttempt(c.dir, r.Turn, r.Attempt, r.Started); logged || d.Progress().Turns >= r.Turn {
		// An earlier call stopped halfway: recovery finishes an attempt
		// in exactly these states (logged, or stamped but not logged).
		if err := c.recoverInterrupted(); err != nil {
			return TurnRecord{}, err
		}
		rec, _ := engine.LoggedAttempt(c.dir, r.Turn, r.Attempt, r.Started)
		return rec, nil
	}
	snapshot, err := h.snapshot(st)
	if err != nil {
		return TurnRecord{}, err
	}
	if out.Land != nil {
		// Before the turn is judged, as when the agent ran here: what it
		// did to the workspace stands whatever it wrote in the record.
		if err := out.Land(); err != nil {
			return TurnRecord{}, fmt.Errorf("turn %d's workspace: %w", r.Turn, err)
		}
	}
	if err := h.putAgentVersion(r, snapshot, after); err != nil {
		return TurnRecord{}, err
	}
	t, err := h.plan(r)
	if err != nil {
		return TurnRecord{}, err
	}
	// Settle has no caller's context: what it starts (git, for refs and
	// the record's commits) is short, and must finish once begun.
	ctx := context.Background()
	if t.ws, err = h.land(ctx, t, commits); err != nil {
		return TurnRecord{}, err
	}
	want, err := c.expect(ctx, t)
	if err != nil {
		return TurnRecord{}, err
	}
	if commits != nil {
		want.Tampered = commits.Tampered
	}
	return c.settle(ctx, t, r.Started, snapshot, res, want)
}

// land makes what a remote worktree session committed the turn's branch
// in the home's repository: the bundle's branch, or the start when it
// committed nothing (the loop's branch then, deleted once the turn is
// recorded unless the turn cites it). It returns the worktree as settle
// knows one whose session is over. Run again after a crash, it puts the
// branch where it put it before.
func (h *Home) land(ctx context.Context, t *plan, cm *Commits) (*worktree, error) {
	if cm == nil {
		return nil, nil
	}
	repo, err := h.c.worktreeRepo(ctx, t)
	if err != nil {
		return nil, err
	}
	refuse := func(err error) error {
		return badInput(fmt.Errorf("turn %d's commits, sent back by the worker, cannot become %s in %s: %w", t.Turn, cm.Branch, repo.Root, err))
	}
	if want := turnBranch(&t.meta, t.Turn); cm.Branch != want {
		return nil, refuse(fmt.Errorf("they are on %s, not the turn's branch %s", cm.Branch, want))
	}
	ws := &worktree{repo: repo, branch: cm.Branch, start: cm.Start, removed: true}
	if len(cm.Bundle) == 0 {
		if err := repo.SetBranch(ctx, cm.Branch, cm.Start); err != nil {
			return nil, refuse(err)
		}
		return ws, nil
	}
	head, err := repo.Unbundle(ctx, cm.Bundle, cm.Branch)
	if err != nil {
		return nil, refuse(err)
	}
	if head != cm.Head {
		return nil, refuse(fmt.Errorf("the bundle's branch is at %s, the worker said %s", head, cm.Head))
	}
	ws.came = branchRef(cm.Branch, head)
	return ws, nil
}

// putAgentVersion puts the agent's version of the file where the agent
// would have left it had it run here, for settle to judge. Nobody else
// writes the record during an attempt (supervisor notes are queued), but
// a person may have edited it by hand: that version is kept beside the
// rejected ones rather than lost.
func (h *Home) putAgentVersion(r TurnRef, snapshot, after []byte) error {
	c := h.c
	if after == nil {
		return nil // the agent's copy was gone: the record stays the snapshot, and no turn is judged
	}
	cur, err := walkie.ReadRegular(c.file)
	if err != nil {
		return err
	}
	if string(cur) != string(snapshot) {
		keep := strings.TrimSuffix(walkie.KeepPath(c.dir, r.Turn, r.Participant, r.Attempt), ".md") + "-home.md"
		if err := walkie.WriteFileAtomic(keep, cur, 0o644); err != nil {
			return fmt.Errorf("keep the record as edited during turn %d: %w", r.Turn, err)
		}
		c.log.Warn("the record was edited during a remote turn; that version is kept and replaced by the agent's", zap.Int("turn", r.Turn), zap.String("kept", keep))
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(c.file); err == nil {
		mode = fi.Mode().Perm()
	}
	return walkie.WriteFileAtomic(c.file, after, mode)
}

// Abandon clears the running attempt r when no session ever ran for it
// (no worker started it, or the halt came first): the record goes back
// to the snapshot and nothing is logged, as when a local session cannot
// start. An attempt no longer running is left alone.
func (h *Home) Abandon(r TurnRef) error {
	st, err := h.c.stateLog.State()
	if err != nil || !h.running(st, r) {
		return err
	}
	snapshot, err := h.snapshot(st)
	if err != nil {
		return err
	}
	return h.c.abandon(snapshot, nil)
}

// snapshot is the record as it stood when the running attempt began.
func (h *Home) snapshot(st *walkie.State) ([]byte, error) {
	// Only the first Size bytes matter: an agent that left a huge file is
	// not read past them.
	cur, err := readHead(h.c.file, max(st.Running.Size, 0))
	if err != nil {
		return nil, err
	}
	return readSnapshot(h.c.file, cur, st.Running, st)
}

// running reports whether r is the attempt the state has as running.
func (h *Home) running(st *walkie.State, r TurnRef) bool {
	a := st.Running
	return a != nil && a.Turn == r.Turn && a.Number == r.Attempt && a.Agent == r.Participant &&
		a.Started.Equal(r.Started.Truncate(time.Millisecond))
}

// plan is the loop's plan for r, with the agent that plays it.
func (h *Home) plan(r TurnRef) (*plan, error) {
	a, _ := h.c.agentFor(r.Participant) // unconfigured: no retries
	// The front matter as it is now: the judge checks refs against the
	// repository it binds.
	m, err := walkie.ReadMeta(h.c.file)
	if err != nil {
		return nil, err
	}
	t := &plan{Decision: Decision{Turn: r.Turn, Round: r.Round, Participant: r.Participant, Agent: a}, attempt: r.Attempt, meta: m}
	if h.c.table != nil && r.Participant == m.Implementer {
		t.role = "implementer" // the round table's implementer runs as a turn
	}
	return t, nil
}
