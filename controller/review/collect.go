package review

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// collect reads how a document's debate ended from its record, its turn
// log and (for a round table) its last round, and judges the verdict.
func (p *plan) collect(dr *DocResult, d planDoc, ws *workspace, sum controller.Summary, runErr error) error {
	changes, err := ws.changes()
	if err != nil {
		return err
	}
	if p.mode == walkie.ModeRoundtable {
		// A document removed, or replaced by what is not a file (a named
		// pipe), reads as gone: the revision deletes it.
		now, err := ws.readFile(d.path)
		var nr *walkie.NotRegularError
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.As(err, &nr) {
			return err
		}
		if !bytes.Equal(now, d.text) {
			dr.Revision = briefing.Diff("a/"+d.path, "b/"+d.path, d.text, now)
		}
		changes = slices.DeleteFunc(changes, func(c string) bool { return strings.HasSuffix(c, " "+d.path) })
	}
	dr.Discarded = append(dr.Discarded, changes...)
	doc, err := walkie.Load(dr.Record)
	if err != nil {
		return err
	}
	dr.ChainHash = doc.LastHash()
	if verr := doc.Verify(); verr != nil {
		dr.VerifyError = verr.Error()
	} else {
		dr.Verified = true
	}
	at, err := controller.ReadStanding(doc, controller.StandingOptions{Config: p.config()})
	if err != nil {
		return err
	}
	rep, err := roundtable.BuildReport(doc, at.ReportHead())
	if err != nil {
		return err
	}
	dr.Status, dr.Rounds, dr.MaxRounds, dr.Turns, dr.CostUSD = rep.Status, rep.Rounds, rep.MaxRounds, rep.Turns, rep.CostUSD
	dr.Costs = append(dr.Costs, rep.Agents...)
	recs, err := controller.ReadTurnLog(walkie.StateDir(dr.Record, doc.Meta.ID))
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Outcome != walkie.OutcomeAccepted {
			f := fmt.Sprintf("turn %d · %s, attempt %d: %s", r.Turn, r.Agent, r.Attempt, r.Outcome)
			if r.Detail != "" {
				f += " (" + r.Detail + ")"
			}
			dr.Failures = append(dr.Failures, f)
		}
	}
	lines := map[string]int{}
	for _, x := range p.docs {
		lines[x.path] = lineCount(x.text)
	}
	c := newCiter(lines)
	if p.mode == walkie.ModeRoundtable {
		if err := p.roundtableParties(dr, doc, rep); err != nil {
			return err
		}
	} else {
		debateParties(dr, doc)
	}
	for i := range dr.Objections {
		c.cite(&dr.Objections[i])
	}
	p.judge(dr, rep, sum, runErr, recs)
	return nil
}

// debateParties reads each participant's last turn: its position, its
// sign-off, and, when it did not sign, its objections.
func debateParties(dr *DocResult, doc *walkie.Doc) {
	for _, name := range doc.Meta.Participants {
		pt := Party{Agent: name, Role: "reviewer"}
		var last *walkie.Entry
		for i := range doc.Entries {
			if e := &doc.Entries[i]; e.Kind == walkie.KindTurn && e.Agent == name {
				last = e
				pt.Turns++
			}
		}
		if last != nil {
			pt.Signed, pt.Position = last.Signed(), last.Text()
			if !pt.Signed {
				for _, t := range parseObjections(last.Body) {
					dr.Objections = append(dr.Objections, Objection{Agent: name, Text: t})
				}
			}
		}
		dr.Parties = append(dr.Parties, pt)
	}
}

// roundtableParties reads the implementer's last turn and each reviewer's
// last verdict; the open objections are the last round's blocking ones.
func (p *plan) roundtableParties(dr *DocResult, doc *walkie.Doc, rep *roundtable.Report) error {
	turns := map[string]int{}
	var implementer *walkie.Entry
	for i := range doc.Entries {
		e := &doc.Entries[i]
		if e.Kind != walkie.KindTurn {
			continue
		}
		turns[e.Agent]++
		if e.Agent == doc.Meta.Implementer {
			implementer = e
		}
	}
	impl := Party{Agent: doc.Meta.Implementer, Role: "implementer", Turns: turns[doc.Meta.Implementer]}
	if implementer != nil {
		impl.Position = implementer.Text()
	}
	dr.Parties = append(dr.Parties, impl)
	last, err := lastRound(dr.Record, doc.Meta.ID, rep.Rounds)
	if err != nil {
		return err
	}
	for _, name := range doc.Meta.Reviewers {
		pt := Party{Agent: name, Role: "reviewer", Turns: turns[name], Position: "no verdict yet"}
		if last != nil {
			for _, r := range last.Reviews {
				if r.Reviewer != name {
					continue
				}
				pt.Position = reviewPosition(r)
				if r.Verdict == nil {
					break
				}
				pt.Signed = r.Verdict.Approves
				for _, o := range r.Verdict.Blockers() {
					dr.Objections = append(dr.Objections, Objection{Agent: name,
						Text: clipText(fmt.Sprintf("%s (rule: %s; failing input: %s)", o.Summary, o.Rule, o.FailingInput), maxObjectionBytes)})
				}
			}
		}
		dr.Parties = append(dr.Parties, pt)
	}
	return nil
}

// lastRound reads round-N/round.json of a round table's last decided
// round (docs/roundtable.md, "Files"); nil before the first.
func lastRound(file, id string, n int) (*roundtable.RoundResult, error) {
	if n < 1 {
		return nil, nil
	}
	path := filepath.Join(walkie.StateDir(file, id), "roundtable", fmt.Sprintf("round-%d", n), "round.json")
	b, err := walkie.ReadRegular(path) // in the agents' copy
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rr roundtable.RoundResult
	if err := json.Unmarshal(b, &rr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &rr, nil
}

// reviewPosition says in a line how a reviewer's last review went.
func reviewPosition(r roundtable.ReviewResult) string {
	if r.Verdict == nil {
		return fmt.Sprintf("no verdict (%s: %s); this is not a rejection", r.Outcome, r.Detail)
	}
	word := "approves"
	if !r.Verdict.Approves {
		word = "requests changes"
	}
	s := fmt.Sprintf("%s: %d blocking objection(s), %d advice", word, len(r.Verdict.Blockers()), r.Verdict.AdviceCount())
	for _, o := range r.Verdict.Objections {
		s += "\n- " + o.Summary
	}
	return s
}

// judge sets the verdict from how the run ended. Only a debate that ran
// to its end without agreement is a disagreement; anything that stopped
// it early (a failing model, a missing key, the budget, a cancel) is a
// failure, and says it is not a rejection.
func (p *plan) judge(dr *DocResult, rep *roundtable.Report, sum controller.Summary, runErr error, recs []controller.TurnRecord) {
	notRejection := "; this is not a rejection of the design"
	set := func(verdict, failure, reason string) { dr.Verdict, dr.Failure, dr.Reason = verdict, failure, reason }
	reason := cmp.Or(rep.Reason, sum.Reason)
	switch {
	case sum.Interrupted || errors.Is(runErr, context.Canceled):
		set(VerdictFailed, FailureInterrupted, "the run was cancelled (SIGINT or SIGTERM, as when a newer push cancels the job) before the debate ended"+notRejection)
	case runErr != nil && errAsInput(runErr):
		set(VerdictFailed, FailureSetup, "an agent cannot run here: "+setupReason(runErr)+notRejection)
	case runErr != nil:
		set(VerdictFailed, FailureWalkie, "walkie failed while running the debate: "+runErr.Error()+notRejection)
	case dr.Status == walkie.StatusConverged && dr.Revision != "":
		set(VerdictDisagreed, "", fmt.Sprintf("the reviewers accept only %s's revision of the document (below), not the document as written", p.agents[0]))
	case dr.Status == walkie.StatusConverged:
		set(VerdictAgreed, "", "every reviewer accepted it as written after "+walkie.Count(dr.Rounds, "round", "rounds"))
	case dr.Status == walkie.StatusMaxRounds, dr.Status == walkie.StatusDeadlocked:
		set(VerdictDisagreed, "", fmt.Sprintf("not accepted: no agreement within %s; %s", walkie.Count(dr.MaxRounds, "round", "rounds"), unsigned(dr)))
		if dr.Status == walkie.StatusDeadlocked {
			dr.Reason = "not accepted: the reviewers are deadlocked (" + reason + ")"
		}
	case dr.Status == walkie.StatusFailed:
		failure := FailureAgents
		if last := lastFailure(recs); last != "" && !last.Retryable() {
			failure = FailureSetup
		}
		set(VerdictFailed, failure, "the agents could not finish: "+reason+notRejection)
	case dr.Status == walkie.StatusOverBudget:
		set(VerdictFailed, FailureBudget, "stopped by the budget: "+reason+notRejection)
	case dr.Status == walkie.StatusHalted:
		set(VerdictFailed, FailureHalted, "halted by a person: "+cmp.Or(reason, "walkie halt")+notRejection)
	default:
		set(VerdictFailed, FailureWalkie, fmt.Sprintf("the debate stopped while %s", dr.Status)+notRejection)
	}
}

// setupReason says in one line why an agent cannot run, with the fix that
// applies to a review: a CLI that is not installed is installed before
// walkie runs (the action's install-clis input), or its command named in
// the config the review was given.
func setupReason(err error) string {
	var mc *engine.MissingCommandError
	if !errors.As(err, &mc) {
		return err.Error()
	}
	fix := fmt.Sprintf("install it before walkie review runs (the GitHub action installs the presets among its agents: install-clis: auto), or give --config a file whose agents.%s.command names it", mc.Agent)
	if mc.Config != "" {
		fix = fmt.Sprintf("install it before walkie review runs (the GitHub action's install-clis input installs claude, codex and gemini), or fix agents.%s.command in %s", mc.Agent, mc.Config)
	}
	return fmt.Sprintf("%s's command %q is not installed (not found on PATH): %s", mc.Agent, mc.Command, fix)
}

// unsigned names the reviewers whose last turn did not sign off.
func unsigned(dr *DocResult) string {
	var names []string
	for _, pt := range dr.Parties {
		if pt.Role == "reviewer" && !pt.Signed {
			names = append(names, pt.Agent)
		}
	}
	switch len(names) {
	case 0:
		return "every reviewer's last turn signed off, but a later turn voided a sign-off"
	case 1:
		return names[0] + " did not sign off"
	}
	return strings.Join(names, " and ") + " did not sign off"
}

// lastFailure is the outcome of the last attempt that failed.
func lastFailure(recs []controller.TurnRecord) walkie.Outcome {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Outcome != walkie.OutcomeAccepted {
			return recs[i].Outcome
		}
	}
	return ""
}
