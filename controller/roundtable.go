package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// freeze records the workspace as the implementer left it: a manifest,
// its hash and a snapshot copy under the round's directory.
func (c *controller) freeze(ctx context.Context, round, turn int, m *walkie.Meta) (*Freeze, manifest, error) {
	rd := c.roundDir(round)
	var fr Freeze
	var mf manifest
	ok1, err := readJSON(filepath.Join(rd, "freeze.json"), &fr)
	if err != nil {
		return nil, nil, err
	}
	ok2, err := readJSON(filepath.Join(rd, "manifest.json"), &mf)
	if err != nil {
		return nil, nil, err
	}
	if ok1 && ok2 && mf.hash() == fr.Workspace {
		return &fr, mf, nil
	}
	snap := filepath.Join(rd, "snapshot")
	if err := os.RemoveAll(snap); err != nil { // a freeze cut short
		return nil, nil, err
	}
	ws := c.workspaceOf(m)
	paths, listing, err := ws.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(snap, 0o755); err != nil {
		return nil, nil, err
	}
	if mf, err = scan(ws.root, paths, snap); err != nil {
		return nil, nil, err
	}
	fr = Freeze{Round: round, Turn: turn, Workspace: mf.hash(), Listing: listing, Files: len(mf), At: time.Now().UTC().Truncate(time.Millisecond)}
	for _, e := range mf {
		fr.Bytes += e.Size
	}
	if mf == nil {
		mf = manifest{}
	}
	if err := writeJSON(filepath.Join(rd, "manifest.json"), mf); err != nil {
		return nil, nil, err
	}
	if err := writeJSON(filepath.Join(rd, "freeze.json"), fr); err != nil {
		return nil, nil, err
	}
	c.log.Info("workspace frozen", zap.Int("round", round), zap.String("workspace_sha256", fr.Workspace), zap.Int("files", fr.Files), zap.String("listing", listing))
	return &fr, mf, nil
}

// grade runs the grader on a copy of the frozen workspace, once per round.
func (c *controller) grade(ctx context.Context, round int, fr *Freeze, mf manifest, m *walkie.Meta) (*GraderResult, error) {
	rd := c.roundDir(round)
	var g GraderResult
	if ok, err := readJSON(filepath.Join(rd, "grader.json"), &g); err != nil || (ok && g.Workspace == fr.Workspace) {
		return &g, err
	}
	tmp, err := os.MkdirTemp("", "walkie-grader-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	copyDir := filepath.Join(tmp, "workspace")
	if err := copySnapshot(filepath.Join(rd, "snapshot"), mf, copyDir); err != nil {
		return nil, err
	}
	dir := filepath.Dir(c.file)
	g, err = runGrader(ctx, graderCommand(m.Grader, dir, copyDir, round), copyDir, dir, round, m.GraderLimit(), graderLogPath(rd),
		func(pid int) { c.noteRunning("grader", pid, tmp) })
	c.forgetRunning("grader")
	if err != nil {
		return nil, err
	}
	g.Workspace, g.Log = fr.Workspace, rel(c.dir, graderLogPath(rd))
	if err := writeJSON(filepath.Join(rd, "grader.json"), g); err != nil {
		return nil, err
	}
	c.log.Info("grader ran", zap.Int("round", round), zap.String("status", g.Status), zap.String("detail", g.Detail), zap.Int64("duration_ms", g.DurationMS))
	c.emit(Event{Kind: EventNote, Round: round, Line: fmt.Sprintf("round %d: the grader says %s (%s)", round, g.Status, time.Duration(g.DurationMS)*time.Millisecond)})
	return &g, nil
}

// checkIntrusion compares the real workspace with the frozen state after
// the reviewers ran. Reviewers work on copies, but nothing stops an agent
// from writing to a path it learnt from the record: such a change is kept
// aside, undone and recorded.
func (c *controller) checkIntrusion(ctx context.Context, round int, fr *Freeze, mf manifest, m *walkie.Meta) error {
	ws := c.workspaceOf(m)
	paths, _, err := ws.list(ctx)
	if err != nil {
		return err
	}
	now, err := scan(ws.root, paths, "")
	if err != nil {
		return err
	}
	if now.hash() == fr.Workspace {
		return nil
	}
	rd := c.roundDir(round)
	changes := diffManifests(mf, now)
	aside := filepath.Join(rd, "intruded")
	if err := restore(ws.root, filepath.Join(rd, "snapshot"), mf, changes, aside); err != nil {
		return fmt.Errorf("undo changes made to the workspace during review: %w", err)
	}
	var prev []Change
	if _, err := readJSON(filepath.Join(rd, "intruded.json"), &prev); err != nil {
		return err
	}
	c.log.Warn("the workspace changed while the reviewers ran; the changes were kept aside and undone",
		zap.Int("round", round), zap.Int("changes", len(changes)), zap.String("aside", aside))
	return writeJSON(filepath.Join(rd, "intruded.json"), append(prev, changes...))
}

// settleRound decides the last complete round, once: converged,
// deadlocked, failed, or on to the next round.
func (c *controller) settleRound() error {
	d, err := walkie.Load(c.file)
	if err != nil {
		return badInput(err)
	}
	m := d.Meta
	n, turns := len(m.Participants), d.Progress().Turns
	if turns == 0 || turns%n != 0 {
		return nil
	}
	round := turns / n
	rd := c.roundDir(round)
	var rr RoundResult
	ok, err := readJSON(filepath.Join(rd, "round.json"), &rr)
	if err != nil {
		return err
	}
	if !ok {
		if rr, err = c.decideRound(&m, round); err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(rd, "round.json"), rr); err != nil {
			return err
		}
	}
	if rr.Applied {
		return nil
	}
	return c.applyDecision(&m, &rr)
}

// decideRound gathers a round's results and applies the round table's rules.
func (c *controller) decideRound(m *walkie.Meta, round int) (RoundResult, error) {
	rd := c.roundDir(round)
	rr := RoundResult{Round: round, Quorum: m.QuorumNeeded(), DecidedAt: time.Now().UTC().Truncate(time.Millisecond)}
	var fr Freeze
	if _, err := readJSON(filepath.Join(rd, "freeze.json"), &fr); err != nil {
		return rr, err
	}
	rr.Workspace = fr.Workspace
	var g GraderResult
	if ok, err := readJSON(filepath.Join(rd, "grader.json"), &g); err != nil {
		return rr, err
	} else if ok {
		rr.Grader = &g
	}
	if _, err := readJSON(filepath.Join(rd, "intruded.json"), &rr.Intruded); err != nil {
		return rr, err
	}
	blockers, missing := 0, []string{}
	for _, name := range m.Reviewers {
		var r ReviewResult
		ok, err := readJSON(filepath.Join(rd, "review-"+name+".json"), &r)
		if err != nil {
			return rr, err
		}
		if !ok { // entered by hand (walkie post) rather than by a review: no verdict to read
			r = ReviewResult{Round: round, Reviewer: name, Outcome: OutcomeNoTurn, Detail: "no review result was found"}
		}
		switch {
		case r.Verdict == nil:
			missing = append(missing, fmt.Sprintf("%s (%s)", name, r.Outcome))
		case r.Verdict.Approves:
			rr.Approvals++
		default:
			blockers += len(r.Verdict.Blockers())
		}
		rr.Reviews = append(rr.Reviews, r)
	}
	history, err := c.blockerHistory(m, round, rr.Reviews)
	if err != nil {
		return rr, err
	}
	passed := rr.Grader.Passed()
	switch dl := detectDeadlock(history); {
	case passed && rr.Approvals >= rr.Quorum:
		rr.Decision = DecisionConverged
		rr.Reason = fmt.Sprintf("round %d: the grader passed and %d of %d reviewers approved (quorum %d)", round, rr.Approvals, len(m.Reviewers), rr.Quorum)
	case dl != nil:
		rr.Decision, rr.Deadlock = DecisionDeadlocked, dl
		rr.Reason = fmt.Sprintf("round %d: the reviewers disagree on the input %s, which the briefing does not decide (%s)", round, quoteInput(dl.Question), dl.Kind)
	case rr.Grader != nil && rr.Grader.Status == GraderError:
		rr.Decision = DecisionFailed
		rr.Reason = fmt.Sprintf("round %d: the grader could not run (%s); fix `grader:` and run walkie resume", round, rr.Grader.Detail)
	case blockers > 0 || !passed:
		rr.Decision = DecisionNextRound
		rr.Reason = fmt.Sprintf("round %d: %d blocking objection(s), grader %s", round, blockers, graderStatus(rr.Grader))
	default:
		rr.Decision = DecisionFailed
		rr.Reason = fmt.Sprintf("round %d: no valid verdict from %s after retries, and nothing else to change; a timeout or crash is not a rejection, so the supervisor must look",
			round, strings.Join(missing, ", "))
	}
	return rr, nil
}

func graderStatus(g *GraderResult) string {
	if g == nil {
		return "not run"
	}
	return g.Status
}

// blockerHistory is every round so far as deadlock detection reads it,
// with round `round` taken from reviews (not yet saved).
func (c *controller) blockerHistory(m *walkie.Meta, round int, reviews []ReviewResult) ([]roundBlockers, error) {
	var out []roundBlockers
	for r := 1; r <= round; r++ {
		rb := roundBlockers{Round: r, Valid: map[string][]Objection{}}
		rs := reviews
		if r < round {
			var rr RoundResult
			ok, err := readJSON(filepath.Join(c.roundDir(r), "round.json"), &rr)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			rs = rr.Reviews
		}
		for _, rv := range rs {
			if rv.Verdict != nil {
				rb.Valid[rv.Reviewer] = rv.Verdict.Blockers()
			}
		}
		out = append(out, rb)
	}
	return out, nil
}

// applyDecision sets the status a decision calls for and writes its notes,
// unless a person's halt stands in the way (then it is applied on resume).
func (c *controller) applyDecision(m *walkie.Meta, rr *RoundResult) error {
	status := map[string]string{DecisionConverged: walkie.StatusConverged, DecisionDeadlocked: walkie.StatusDeadlocked, DecisionFailed: walkie.StatusFailed}[rr.Decision]
	rd := c.roundDir(rr.Round)
	if status == "" {
		rr.Applied = true
		return writeJSON(filepath.Join(rd, "round.json"), rr)
	}
	st, err := walkie.LoadState(c.dir)
	if err != nil {
		return err
	}
	if st.Status != "" && st.Status != status {
		return nil // halted meanwhile: applied when resumed
	}
	if rr.Deadlock != nil {
		if err := walkie.WriteFileAtomic(filepath.Join(c.dir, "roundtable", "deadlock.md"), []byte(deadlockReport(m, rr)), 0o644); err != nil {
			return err
		}
	}
	if _, err := c.setStatus(status, rr.Reason); err != nil {
		return err
	}
	if note := decisionNote(m, rr); note != "" {
		if _, err := walkie.Append(c.file, walkie.Post{Supervisor: true, Body: []byte(note)}); err != nil {
			return fmt.Errorf("record the round table's end: %w", err)
		}
	}
	rr.Applied = true
	if status == walkie.StatusFailed {
		c.log.Warn("round table failed; the supervisor must look", zap.String("reason", rr.Reason))
	} else {
		c.log.Info("round table ended", zap.String("status", status), zap.String("reason", rr.Reason))
	}
	return writeJSON(filepath.Join(rd, "round.json"), rr)
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
