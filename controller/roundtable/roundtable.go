package roundtable

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// The round table (mode: roundtable). Each round is one implementer turn
// and one verdict turn per reviewer, so the record keeps the debate's
// round-robin order and chain. Between them, out of the record:
//
//	freeze   the workspace's manifest hash and a snapshot copy
//	grade    the grader on a copy of the snapshot (never shown to reviewers)
//	review   every reviewer at once, each in its own copy, writing a verdict file
//	enter    the verdicts, as the reviewers' turns, in their fixed order
//	settle   converged, deadlocked, failed, or the next round
//
// Every step leaves its result under .walkie/ID/roundtable/round-N/ and is
// skipped when its result is already there, so the loop is level-based like
// the debate's: a restart picks up at the first missing result.
//
// Before the first round, the phases (phase.go) run and are approved.
//
// The steps are one call away: freeze and the intrusion check in
// workspace.go, grade in grader.go, review in review.go, settle in
// decide.go (deadlock in deadlock.go), and what goes into the record in
// record.go; the report (report.go) and its quorum replay (replay.go)
// read what the steps left. docs/roundtable.md is the user's view.

// Round decisions (RoundResult.Decision).
const (
	DecisionConverged  = "converged"
	DecisionDeadlocked = "deadlocked"
	DecisionFailed     = "failed"
	DecisionNextRound  = "next-round"
	// DecisionMaxRounds is how the report shows a next-round decision in
	// the round at the cap: no round followed it.
	DecisionMaxRounds = "max-rounds"
)

// Freeze is round-N/freeze.json: the state of the workspace the round judged.
type Freeze struct {
	Round     int       `json:"round"`
	Turn      int       `json:"turn"`             // the implementer's turn it follows
	Workspace string    `json:"workspace_sha256"` // manifest hash
	Listing   string    `json:"listing"`          // git or dir
	Files     int       `json:"files"`
	Bytes     int64     `json:"bytes"`
	At        time.Time `json:"at"`
}

// ReviewResult is round-N/review-NAME.json: one reviewer's part of a round.
type ReviewResult struct {
	Round    int    `json:"round"`
	Reviewer string `json:"reviewer"`
	Turn     int    `json:"turn"`
	// Outcome is accepted when a valid verdict came in, else the last
	// attempt's outcome: a timeout or a crash is never a rejection.
	Outcome   walkie.Outcome  `json:"outcome"`
	Detail    string          `json:"detail,omitempty"`
	Verdict   *ReviewVerdict  `json:"verdict,omitempty"`
	Attempts  []ReviewAttempt `json:"attempts"`
	Discarded []Change        `json:"discarded,omitempty"` // what it changed in its copy, thrown away
	Started   time.Time       `json:"started"`
	Ended     time.Time       `json:"ended"`
	CostUSD   float64         `json:"cost_usd,omitempty"`
}

// ReviewAttempt is one session of a reviewer.
type ReviewAttempt struct {
	Attempt   int            `json:"attempt"`
	Outcome   walkie.Outcome `json:"outcome"`
	Detail    string         `json:"detail,omitempty"`
	Started   time.Time      `json:"started"`
	Ended     time.Time      `json:"ended"`
	Discarded []Change       `json:"discarded,omitempty"`
}

// RoundResult is round-N/round.json: how a round was decided.
type RoundResult struct {
	Round     int            `json:"round"`
	Workspace string         `json:"workspace_sha256"`
	Grader    *GraderResult  `json:"grader"`
	Reviews   []ReviewResult `json:"reviews"`
	Approvals int            `json:"approvals"`
	Quorum    int            `json:"quorum"`
	Decision  string         `json:"decision"`
	Reason    string         `json:"reason"`
	Deadlock  *Deadlock      `json:"deadlock,omitempty"`
	// Intruded lists changes made to the real workspace while the
	// reviewers ran: kept aside and undone.
	Intruded  []Change  `json:"intruded,omitempty"`
	Applied   bool      `json:"applied"` // the decision's status and notes are written
	DecidedAt time.Time `json:"decided_at"`
}

// Table runs one round table's own steps for the controller's loop, which
// runs the implementer's turns as it runs any debate turn.
type Table struct {
	Host
}

// Host is what the controller gives the round table: the debate's files,
// the engine that runs every session, and the loop's own services.
type Host struct {
	File, Dir string // the record (absolute) and its state directory
	Engine    *engine.Engine
	Log       *zap.Logger
	// Emit tells the run's observer; it may be called from several
	// goroutines at once (the reviewers run in parallel).
	Emit func(engine.Event)
	// Agent is the configured agent that plays a participant.
	Agent func(participant string) (config.Agent, error)
	// Acquire waits for a session slot (the daemon's limits); nil: none.
	Acquire engine.AcquireFunc
	// Halted reports whether a person halted the debate.
	Halted func() bool
	// SetStatus ends the debate with a status and its reason.
	SetStatus func(status, reason string) error
	// RunFile, when set, runs the sessions of the phases and the
	// reviewers somewhere else (a remote engine's workers); nil: with
	// Engine, here.
	RunFile func(ctx context.Context, fa engine.FileAttempt) (engine.FileResult, error)
}

// Turn is the turn the loop is at: the implementer's, or the first
// reviewer's verdict still missing from round Round.
type Turn struct {
	Turn, Round, RoundCap int
	Participant           string
	Meta                  walkie.Meta
}

// New returns the round table of h's debate.
func New(h Host) *Table { return &Table{Host: h} }

// The controller's loop calls these, in this order, on every pass.

// Recover ends the sessions of reviewers (and a grader) that a dead
// controller left running, and removes their sandboxes.
func (rt *Table) Recover() error { return rt.recoverReviewers() }

// Settle decides the last complete round, once: converged, deadlocked,
// failed, or on to the next round.
func (rt *Table) Settle() error { return rt.settleRound() }

// CheckWorkspace refuses a workspace that is not a directory.
func (rt *Table) CheckWorkspace(m *walkie.Meta) error { return rt.checkWorkspace(m) }

// ImplementerPrompt is the implementer's prompt for t: the last round's
// blocking objections and, if it did not pass, the grader.
func (rt *Table) ImplementerPrompt(t Turn) (string, error) {
	data, err := rt.ImplementerPromptData(t)
	if err != nil {
		return "", err
	}
	return rt.render("implementer", data)
}

// PhasesPending reports whether the phases still stand before the
// implementer's first turn: one the front matter declares is not pinned
// in the record yet.
func (rt *Table) PhasesPending(t Turn) (bool, error) {
	if t.Round != 1 || len(t.Meta.Phases) == 0 {
		return false, nil
	}
	d, err := walkie.Load(rt.File)
	if err != nil {
		return false, engine.BadInput(err)
	}
	pins := PhasePins(d)
	for _, p := range t.Meta.Phases {
		if _, ok := pins[p.Kind]; !ok {
			return true, nil
		}
	}
	return false, nil
}

// WorkspaceFiles lists the implementer's workspace as a freeze would (git's
// files in a work tree, else every file; never the record or its state):
// its root, and the paths relative to it.
func (rt *Table) WorkspaceFiles(ctx context.Context, m *walkie.Meta) (root string, paths []string, err error) {
	ws := rt.workspaceOf(m)
	paths, _, err = ws.list(ctx)
	return ws.root, paths, err
}

// Review runs the part of round t.Round after the implementer's turn:
// freeze, grade, review, and enter the verdicts still missing from the
// record. It returns the reviewers' attempts.
func (rt *Table) Review(ctx context.Context, t Turn) ([]engine.TurnRecord, error) {
	return rt.reviewRound(ctx, &t)
}

// roundDir is where a round's results are kept.
func (rt *Table) roundDir(round int) string {
	return filepath.Join(rt.Dir, "roundtable", fmt.Sprintf("round-%d", round))
}

// workspaceOf is the implementer's workspace and what is never part of it.
func (rt *Table) workspaceOf(m *walkie.Meta) workspace {
	root := m.Workspace
	if !filepath.IsAbs(root) {
		root = filepath.Join(filepath.Dir(rt.File), root)
	}
	return workspace{root: filepath.Clean(root), exclude: []string{rt.File, filepath.Join(filepath.Dir(rt.File), ".walkie")}}
}

func (rt *Table) checkWorkspace(m *walkie.Meta) error {
	root := rt.workspaceOf(m).root
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() {
		return engine.BadInput(&walkie.InputError{File: rt.File, Msg: fmt.Sprintf("the workspace %s is not a directory", root),
			Fix: "create it (an empty directory is fine) or fix `workspace:` in the front matter"})
	}
	return nil
}

// maxFeedbackBytes bounds the objections quoted in the implementer's prompt.
const maxFeedbackBytes = 48 << 10

// ImplementerPromptData fills the implementer's prompt for t: the last
// round's blocking objections and, if it did not pass, the grader; the
// approved phases, checked against their pins. Its paths are this
// machine's (the record, the workspace, the state directory's phase
// files).
func (rt *Table) ImplementerPromptData(t Turn) (config.ImplementerPromptData, error) {
	m := &t.Meta
	data := config.ImplementerPromptData{Agent: t.Participant, File: rt.File, Workspace: rt.workspaceOf(m).root, Round: t.Round, MaxRounds: t.RoundCap,
		Reviewers: m.Reviewers, Heading: config.Heading(t.Turn, t.Participant)}
	if len(m.Phases) > 0 {
		d, err := walkie.Load(rt.File)
		if err != nil {
			return data, engine.BadInput(err)
		}
		if data.Phases, err = rt.approvedPhases(m.Phases, PhasePins(d)); err != nil {
			return data, err
		}
		data.Spec = spec(data.Phases)
	}
	if t.Round > 1 {
		var prev RoundResult
		ok, err := readJSON(filepath.Join(rt.roundDir(t.Round-1), "round.json"), &prev)
		if err != nil {
			return data, err
		}
		if ok {
			size := 0
			data.GraderRound = prev.Round
			for _, r := range prev.Reviews {
				if r.Verdict == nil {
					continue
				}
				for _, o := range r.Verdict.Blockers() {
					// The prompt is one argv element, which Linux bounds
					// at 128 KiB: quote objections up to a share of that.
					// (Counted as quoted: JSON turns one "<" into six bytes.)
					if size += len(quoteJSON(o.Summary)) + len(quoteJSON(o.Rule)) + len(quoteJSON(o.FailingInput)); size > maxFeedbackBytes {
						data.MoreBlockers++
						continue
					}
					data.Blockers = append(data.Blockers, promptObjection(r.Reviewer, o))
				}
			}
			if g := prev.Grader; g != nil && !g.Passed() {
				data.Grader = &config.PromptGrader{Status: g.Status, Detail: g.Detail, Output: g.Output}
			}
		}
	}
	return data, nil
}

// reviewRound runs the part of round t.Round after the implementer's turn:
// freeze, grade, review, and enter the verdicts still missing from the record.
func (rt *Table) reviewRound(ctx context.Context, t *Turn) ([]engine.TurnRecord, error) {
	m := &t.Meta
	n := len(m.Participants)
	implTurn := (t.Round-1)*n + 1
	fr, mf, err := rt.freeze(ctx, t.Round, implTurn, m)
	if err != nil {
		return nil, fmt.Errorf("freeze the workspace: %w", err)
	}
	if _, err := rt.grade(ctx, t.Round, fr, mf, m); err != nil {
		return nil, err
	}
	record, err := walkie.ReadRegular(rt.File)
	if err != nil {
		return nil, err
	}
	results, recs, err := rt.reviewAll(ctx, t, fr, mf, record)
	if err != nil {
		return recs, err
	}
	for _, r := range results {
		if r == nil {
			return recs, nil // halted or interrupted: the loop reads why
		}
	}
	if err := rt.checkIntrusion(ctx, t.Round, fr, mf, m); err != nil {
		return recs, err
	}
	first := t.Turn - implTurn - 1 // the first reviewer whose verdict is not in yet
	for k := first; k < len(m.Reviewers); k++ {
		body := verdictTurnBody(results[k], fr)
		_, err := walkie.Append(rt.File, walkie.Post{From: m.Reviewers[k], Body: []byte(body)})
		var re *walkie.RefusedError
		if errors.As(err, &re) && rt.Halted() {
			return recs, nil
		}
		if err != nil {
			return recs, fmt.Errorf("record %s's verdict: %w", m.Reviewers[k], err)
		}
		rt.Log.Info("verdict recorded", zap.Int("round", t.Round), zap.String("reviewer", m.Reviewers[k]), zap.String("outcome", string(results[k].Outcome)))
	}
	return recs, nil
}

// readJSON reads path into v; ok is false when the file does not exist.
func readJSON(path string, v any) (bool, error) {
	b, err := walkie.ReadSideFile(filepath.Dir(path), filepath.Base(path), walkie.MaxSideFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := jsonUnmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

func writeJSON(path string, v any) error {
	b, err := jsonIndent(v)
	if err != nil {
		return err
	}
	return walkie.WriteFileAtomic(path, b, 0o644)
}
