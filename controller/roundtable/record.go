package roundtable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/walkie-sh/walkie/walkie"
)

// What the round table writes into the record. Text that came from an
// agent only ever appears JSON-encoded (in the verdict's fenced block, or
// as a quoted string): JSON escapes newlines and "<", so no reviewer can
// forge a heading, a marker or a sign-off line in the record.

// verdictTurnBody is the body of a reviewer's turn: a one-line summary,
// the verdict as walkie read it in a fenced block, and notes.
func verdictTurnBody(r *ReviewResult, fr *Freeze) string {
	var b strings.Builder
	short := strings.TrimPrefix(fr.Workspace, "sha256:")
	short = short[:min(12, len(short))]
	if r.Verdict == nil {
		fmt.Fprintf(&b, "**no verdict** (%s) · reviewed workspace sha256:%s · this is not a rejection\n\n", attemptsLine(r), short)
		fmt.Fprintf(&b, "walkie recorded this turn for %s: %s.\n", r.Reviewer, quoteJSON(r.Detail))
	} else {
		v := r.Verdict
		word := "approve"
		if !v.Approves {
			word = "request changes"
		}
		fmt.Fprintf(&b, "**%s** · %d blocking, %d advice · reviewed workspace sha256:%s (frozen after turn %d)\n\n",
			word, len(v.Blockers()), v.AdviceCount(), short, fr.Turn)
		js, _ := jsonIndent(struct {
			Verdict    string      `json:"verdict"`
			Objections []Objection `json:"objections"`
		}{v.Verdict, nonNilObjections(v.Objections)})
		b.WriteString("```json\n")
		b.Write(bytes.TrimRight(js, "\n"))
		b.WriteString("\n```\n")
		for _, n := range v.Notes {
			fmt.Fprintf(&b, "\n- walkie: %s", n)
		}
		if len(v.Notes) > 0 {
			b.WriteString("\n")
		}
		if len(r.Attempts) > 1 {
			fmt.Fprintf(&b, "\n- walkie: %s\n", attemptsLine(r))
		}
	}
	if len(r.Discarded) > 0 {
		fmt.Fprintf(&b, "\n- walkie: changes %s made in its copy of the workspace were discarded: %s\n", r.Reviewer, changeList(r.Discarded, 20))
	}
	return b.String()
}

// attemptsLine says how each attempt ended: "timeout, then accepted".
func attemptsLine(r *ReviewResult) string {
	var parts []string
	for _, a := range r.Attempts {
		parts = append(parts, string(a.Outcome))
	}
	s := strings.Join(parts, ", then ")
	if len(r.Attempts) > 1 {
		s = fmt.Sprintf("%d attempts: %s", len(r.Attempts), s)
	}
	return s
}

func changeList(ch []Change, limit int) string {
	var parts []string
	for i, c := range ch {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(ch)-limit))
			break
		}
		parts = append(parts, quoteJSON(c.Path)+" ("+c.Kind+")")
	}
	return strings.Join(parts, ", ")
}

// decisionNote is the supervisor entry that closes a round table.
func decisionNote(m *walkie.Meta, rr *RoundResult) string {
	switch rr.Decision {
	case DecisionConverged:
		var approvers []string
		for _, r := range rr.Reviews {
			if r.Verdict != nil && r.Verdict.Approves {
				approvers = append(approvers, r.Reviewer)
			}
		}
		return fmt.Sprintf("walkie: the round table converged in round %d. The hidden grader passed on workspace %s, and %s approved (quorum %d of %d).\n",
			rr.Round, rr.Workspace, listWords(approvers), rr.Quorum, len(m.Reviewers))
	case DecisionDeadlocked:
		d := rr.Deadlock
		var b strings.Builder
		fmt.Fprintf(&b, "walkie: the round table stopped as deadlocked in round %d of %d. A person must decide this question, which the briefing leaves open:\n\n", rr.Round, m.MaxRounds)
		fmt.Fprintf(&b, "**What must the work do on %s?**\n\n", d.InputWords())
		for _, e := range d.Evidence {
			fmt.Fprintf(&b, "- round %d, %s blocked under the rule %s: %s\n", e.Round, e.Reviewer, quoteJSON(e.Rule), quoteJSON(e.Summary))
		}
		fmt.Fprintf(&b, "\nWhy walkie stopped (%s): %s.\n", d.Kind, d.Summary) // built from quoted parts
		b.WriteString("The evidence is in .walkie/" + m.ID + "/roundtable/deadlock.md. Post the decision as a supervisor entry, then `walkie resume` and `walkie auto` to go on.\n")
		return b.String()
	case DecisionFailed:
		return "walkie: the round table stopped as failed: " + quoteJSON(rr.Reason) + "\n"
	}
	return ""
}

// deadlockReport is .walkie/ID/roundtable/deadlock.md, for the person who
// must decide.
func deadlockReport(m *walkie.Meta, rr *RoundResult) string {
	d := rr.Deadlock
	var b strings.Builder
	fmt.Fprintf(&b, "# Deadlock in round table %s\n\n", m.ID)
	fmt.Fprintf(&b, "Stopped in round %d of %d: the reviewers take turns blocking, each on what the other's demand made of the work, while the hidden grader passes; the briefing does not decide between them. More rounds would only pay for the same disagreement.\n\n", rr.Round, m.MaxRounds)
	b.WriteString("## The question\n\n")
	fmt.Fprintf(&b, "What must the work do on %s?\n\n", d.InputWords())
	b.WriteString("Each demand below names the rule its reviewer read into the briefing. Decide which holds (or another), then post it as a supervisor entry so the agents read it:\n\n")
	fmt.Fprintf(&b, "    walkie post FILE --supervisor --body-file decision.md\n    walkie resume FILE && walkie auto FILE\n\n")
	b.WriteString("## Evidence\n\n")
	fmt.Fprintf(&b, "%s: %s.\n\n", d.Kind, d.Summary)
	b.WriteString("| round | reviewer | rule | failing input | summary |\n|---|---|---|---|---|\n")
	for _, e := range d.Evidence {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", e.Round, e.Reviewer, cell(e.Rule), cell(quoteJSON(e.FailingInput)), cell(e.Summary))
	}
	b.WriteString("\nEvery verdict is a turn of the record; each round's results are under .walkie/" + m.ID + "/roundtable/round-N/.\n")
	return b.String()
}

// cell makes text safe in one markdown table cell.
func cell(s string) string {
	s = strings.NewReplacer("|", "\\|", "\n", " ", "\r", " ").Replace(s)
	if s == "" {
		return "—"
	}
	return s
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func nonNilObjections(o []Objection) []Objection {
	if o == nil {
		return []Objection{}
	}
	return o
}

func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
