package roundtable

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// settleRound decides the last complete round, once: converged,
// deadlocked, failed, or on to the next round.
func (rt *Table) settleRound() error {
	d, err := walkie.Load(rt.File)
	if err != nil {
		return engine.BadInput(err)
	}
	m := d.Meta
	n, turns := len(m.Participants), d.Progress().Turns
	if turns == 0 || turns%n != 0 {
		return nil
	}
	round := turns / n
	rd := rt.roundDir(round)
	var rr RoundResult
	ok, err := readJSON(filepath.Join(rd, "round.json"), &rr)
	if err != nil {
		return err
	}
	if !ok {
		if rr, err = rt.decideRound(&m, round); err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(rd, "round.json"), rr); err != nil {
			return err
		}
	}
	if rr.Applied {
		return nil
	}
	return rt.applyDecision(&m, &rr)
}

// decideRound gathers a round's results and applies the round table's rules.
func (rt *Table) decideRound(m *walkie.Meta, round int) (RoundResult, error) {
	rd := rt.roundDir(round)
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
			r = ReviewResult{Round: round, Reviewer: name, Outcome: walkie.OutcomeNoTurn, Detail: "no review result was found"}
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
	history, err := rt.blockerHistory(m, round, rr.Reviews)
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
func (rt *Table) blockerHistory(m *walkie.Meta, round int, reviews []ReviewResult) ([]roundBlockers, error) {
	var out []roundBlockers
	for r := 1; r <= round; r++ {
		rb := roundBlockers{Round: r, Valid: map[string][]Objection{}}
		rs := reviews
		if r < round {
			var rr RoundResult
			ok, err := readJSON(filepath.Join(rt.roundDir(r), "round.json"), &rr)
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
func (rt *Table) applyDecision(m *walkie.Meta, rr *RoundResult) error {
	status := map[string]string{DecisionConverged: walkie.StatusConverged, DecisionDeadlocked: walkie.StatusDeadlocked, DecisionFailed: walkie.StatusFailed}[rr.Decision]
	rd := rt.roundDir(rr.Round)
	if status == "" {
		rr.Applied = true
		return writeJSON(filepath.Join(rd, "round.json"), rr)
	}
	st, err := walkie.LoadState(rt.Dir)
	if err != nil {
		return err
	}
	if st.Status != "" && st.Status != status {
		return nil // halted meanwhile: applied when resumed
	}
	if rr.Deadlock != nil {
		if err := walkie.WriteFileAtomic(filepath.Join(rt.Dir, "roundtable", "deadlock.md"), []byte(deadlockReport(m, rr)), 0o644); err != nil {
			return err
		}
	}
	if err := rt.SetStatus(status, rr.Reason); err != nil {
		return err
	}
	if note := decisionNote(m, rr); note != "" {
		if _, err := walkie.Append(rt.File, walkie.Post{Supervisor: true, Body: []byte(note)}); err != nil {
			return fmt.Errorf("record the round table's end: %w", err)
		}
	}
	rr.Applied = true
	if status == walkie.StatusFailed {
		rt.Log.Warn("round table failed; the supervisor must look", zap.String("reason", rr.Reason))
	} else {
		rt.Log.Info("round table ended", zap.String("status", status), zap.String("reason", rr.Reason))
	}
	return writeJSON(filepath.Join(rd, "round.json"), rr)
}
