package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

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
// The steps are one call away: freeze and the intrusion check in
// roundtable_workspace.go, grade in roundtable_grader.go, review in
// roundtable_review.go, settle in roundtable_decide.go (deadlock in
// roundtable_deadlock.go), and what goes into the record in
// roundtable_record.go. docs/roundtable.md is the user's view.

// Round decisions (RoundResult.Decision).
const (
	DecisionConverged  = "converged"
	DecisionDeadlocked = "deadlocked"
	DecisionFailed     = "failed"
	DecisionNextRound  = "next-round"
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
	Outcome   string          `json:"outcome"`
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
	Attempt   int       `json:"attempt"`
	Outcome   string    `json:"outcome"`
	Detail    string    `json:"detail,omitempty"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended"`
	Discarded []Change  `json:"discarded,omitempty"`
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

// IsRoundtable reports whether file is a round table.
func IsRoundtable(file string) bool {
	m, err := walkie.ReadMeta(file)
	return err == nil && m.IsRoundtable()
}

// runRoundtable is Run's loop for a round table.
func (c *controller) runRoundtable(ctx context.Context) (Summary, error) {
	if err := c.recoverReviewers(); err != nil {
		return Summary{}, fmt.Errorf("recover interrupted reviewers: %w", err)
	}
	var sum Summary
	startTurns := -1
	for {
		if err := c.settleRound(); err != nil {
			return sum, err
		}
		next, st, err := c.decide()
		if err != nil {
			return sum, err
		}
		sum.Status, sum.Reason, sum.Turns, sum.CostUSD = st.status, st.reason, st.turns, st.cost
		if startTurns < 0 {
			startTurns = st.turns
		}
		if next == nil || ctx.Err() != nil || (c.opts.Once && st.turns > startTurns) {
			sum.Interrupted = ctx.Err() != nil
			if next == nil {
				c.emit(Event{Kind: EventDebateEnded, Status: st.status, Line: st.reason})
			}
			return sum, nil
		}
		if err := c.checkWorkspace(&next.meta); err != nil {
			return sum, err
		}
		if next.participant == next.meta.Implementer {
			if err := c.prepareImplementer(next); err != nil {
				return sum, err
			}
			rec, err := c.attempt(ctx, next)
			if err != nil {
				return sum, fmt.Errorf("turn %d (%s): %w", next.turn, next.participant, err)
			}
			sum.Attempts = append(sum.Attempts, rec)
			if err := c.applyPolicy(next, rec); err != nil {
				return sum, err
			}
			continue
		}
		recs, err := c.reviewRound(ctx, next)
		sum.Attempts = append(sum.Attempts, recs...)
		if err != nil {
			return sum, fmt.Errorf("round %d review: %w", next.round, err)
		}
	}
}

// roundDir is where a round's results are kept.
func (c *controller) roundDir(round int) string {
	return filepath.Join(c.dir, "roundtable", fmt.Sprintf("round-%d", round))
}

// workspaceOf is the implementer's workspace and what is never part of it.
func (c *controller) workspaceOf(m *walkie.Meta) workspace {
	root := m.Workspace
	if !filepath.IsAbs(root) {
		root = filepath.Join(filepath.Dir(c.file), root)
	}
	return workspace{root: filepath.Clean(root), exclude: []string{c.file, filepath.Join(filepath.Dir(c.file), ".walkie")}}
}

func (c *controller) checkWorkspace(m *walkie.Meta) error {
	root := c.workspaceOf(m).root
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() {
		return badInput(&walkie.InputError{File: c.file, Msg: fmt.Sprintf("the workspace %s is not a directory", root),
			Fix: "create it (an empty directory is fine) or fix `workspace:` in the front matter"})
	}
	return nil
}

// maxFeedbackBytes bounds the objections quoted in the implementer's prompt.
const maxFeedbackBytes = 48 << 10

// prepareImplementer gives the implementer's plan its role and prompt:
// the last round's blocking objections and, if it did not pass, the grader.
func (c *controller) prepareImplementer(t *plan) error {
	m := &t.meta
	data := implementerPromptData{Agent: t.participant, File: c.file, Workspace: c.workspaceOf(m).root, Round: t.round, MaxRounds: t.roundCap,
		Reviewers: m.Reviewers, Heading: fmt.Sprintf("## Turn %d \u00b7 %s", t.turn, t.participant)}
	if t.round > 1 {
		var prev RoundResult
		ok, err := readJSON(filepath.Join(c.roundDir(t.round-1), "round.json"), &prev)
		if err != nil {
			return err
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
					data.Blockers = append(data.Blockers, feedbackItem{Reviewer: r.Reviewer, Objection: o})
				}
			}
			if prev.Grader != nil && !prev.Grader.Passed() {
				data.Grader = prev.Grader
			}
		}
	}
	prompt, err := renderTemplate(implementerPrompt, data)
	if err != nil {
		return fmt.Errorf("implementer prompt: %w", err)
	}
	t.role, t.prompt = "implementer", prompt
	return nil
}

// reviewRound runs the part of round t.round after the implementer's turn:
// freeze, grade, review, and enter the verdicts still missing from the record.
func (c *controller) reviewRound(ctx context.Context, t *plan) ([]TurnRecord, error) {
	m := &t.meta
	n := len(m.Participants)
	implTurn := (t.round-1)*n + 1
	fr, mf, err := c.freeze(ctx, t.round, implTurn, m)
	if err != nil {
		return nil, fmt.Errorf("freeze the workspace: %w", err)
	}
	if _, err := c.grade(ctx, t.round, fr, mf, m); err != nil {
		return nil, err
	}
	record, err := os.ReadFile(c.file)
	if err != nil {
		return nil, err
	}
	results, recs, err := c.reviewAll(ctx, t, fr, mf, record)
	if err != nil {
		return recs, err
	}
	for _, r := range results {
		if r == nil {
			return recs, nil // halted or interrupted: the loop reads why
		}
	}
	if err := c.checkIntrusion(ctx, t.round, fr, mf, m); err != nil {
		return recs, err
	}
	first := t.turn - implTurn - 1 // the first reviewer whose verdict is not in yet
	for k := first; k < len(m.Reviewers); k++ {
		body := verdictTurnBody(results[k], fr)
		_, err := walkie.Append(c.file, walkie.Post{From: m.Reviewers[k], Body: []byte(body)})
		var re *walkie.RefusedError
		if errors.As(err, &re) && c.halted() {
			return recs, nil
		}
		if err != nil {
			return recs, fmt.Errorf("record %s's verdict: %w", m.Reviewers[k], err)
		}
		c.log.Info("verdict recorded", zap.Int("round", t.round), zap.String("reviewer", m.Reviewers[k]), zap.String("outcome", results[k].Outcome))
	}
	return recs, nil
}

// readJSON reads path into v; ok is false when the file does not exist.
func readJSON(path string, v any) (bool, error) {
	b, err := os.ReadFile(path)
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
