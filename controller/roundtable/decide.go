package roundtable

import (
	"fmt"
	"path/filepath"
	"slices"
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
	for _, name := range m.Reviewers {
		var r ReviewResult
		ok, err := readJSON(filepath.Join(rd, "review-"+name+".json"), &r)
		if err != nil {
			return rr, err
		}
		if !ok { // entered by hand (walkie post) rather than by a review: no verdict to read
			r = ReviewResult{Round: round, Reviewer: name, Outcome: walkie.OutcomeNoTurn, Detail: "no review result was found"}
		}
		rr.Reviews = append(rr.Reviews, r)
	}
	earlier, err := readRounds(rt.Dir, round-1)
	if err != nil {
		return rr, err
	}
	rule := rule{quorum: rr.Quorum, reviewers: m.Reviewers}
	d := rule.decide(&rr, rule.history(append(earlier, rr)))
	rr.Approvals, rr.Decision, rr.Reason, rr.Deadlock = d.approvals, d.decision, d.reason, d.deadlock
	return rr, nil
}

// rule is what decides a round: the quorum of approvals among the
// reviewers who count. The run uses the front matter's; walkie report
// --quorum replays the recorded rounds under another.
type rule struct {
	quorum    int
	reviewers []string
}

// decision is a round decided under a rule.
type decision struct {
	approvals, blockers int
	decision, reason    string
	deadlock            *Deadlock
}

// counts reports whether a reviewer's verdict counts under the rule.
func (u rule) counts(reviewer string) bool { return slices.Contains(u.reviewers, reviewer) }

// decide applies the round table's rules, in their order, to round rr
// given the history of every round up to it (history's last is rr).
func (u rule) decide(rr *RoundResult, history []roundBlockers) decision {
	var d decision
	var missing []string
	for _, r := range rr.Reviews {
		if !u.counts(r.Reviewer) {
			continue
		}
		switch {
		case r.Verdict == nil:
			missing = append(missing, fmt.Sprintf("%s (%s)", r.Reviewer, r.Outcome))
		case r.Verdict.Approves:
			d.approvals++
		default:
			d.blockers += len(r.Verdict.Blockers())
		}
	}
	passed, round := rr.Grader.Passed(), rr.Round
	switch dl := detectDeadlock(history); {
	case passed && d.approvals >= u.quorum:
		d.decision = DecisionConverged
		d.reason = fmt.Sprintf("round %d: the grader passed and %d of %d reviewers approved (quorum %d)", round, d.approvals, len(u.reviewers), u.quorum)
	case dl != nil:
		d.decision, d.deadlock = DecisionDeadlocked, dl
		d.reason = fmt.Sprintf("round %d: the reviewers take turns blocking on %s, which the briefing does not decide (%s)", round, dl.InputWords(), dl.Kind)
	case rr.Grader != nil && rr.Grader.Status == GraderError:
		d.decision = DecisionFailed
		d.reason = fmt.Sprintf("round %d: the grader could not run (%s); fix `grader:` and run walkie resume", round, rr.Grader.Detail)
	case d.blockers > 0 || !passed:
		d.decision = DecisionNextRound
		d.reason = fmt.Sprintf("round %d: %d blocking objection(s), grader %s", round, d.blockers, graderStatus(rr.Grader))
	default:
		d.decision = DecisionFailed
		d.reason = fmt.Sprintf("round %d: no valid verdict from %s after retries, and nothing else to change; a timeout or crash is not a rejection, so the supervisor must look",
			round, strings.Join(missing, ", "))
	}
	return d
}

// history is rounds as deadlock detection reads them, with only the
// verdicts of the reviewers who count.
func (u rule) history(rounds []RoundResult) []roundBlockers {
	out := make([]roundBlockers, 0, len(rounds))
	for _, rr := range rounds {
		rb := roundBlockers{Round: rr.Round, GraderPassed: rr.Grader.Passed(), Valid: map[string][]Objection{}, Workspace: rr.Workspace}
		for _, rv := range rr.Reviews {
			if rv.Verdict != nil && u.counts(rv.Reviewer) {
				rb.Valid[rv.Reviewer] = rv.Verdict.Blockers()
			}
		}
		out = append(out, rb)
	}
	return out
}

func graderStatus(g *GraderResult) string {
	if g == nil {
		return "not run"
	}
	return g.Status
}

// readRounds reads the decided rounds 1..last of the round table whose
// state directory is dir, stopping at the first missing one.
func readRounds(dir string, last int) ([]RoundResult, error) {
	var out []RoundResult
	for n := 1; last < 0 || n <= last; n++ {
		var rr RoundResult
		ok, err := readJSON(filepath.Join(dir, "roundtable", fmt.Sprintf("round-%d", n), "round.json"), &rr)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		out = append(out, rr)
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
