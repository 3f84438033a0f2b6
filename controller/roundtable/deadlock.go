package roundtable

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Deadlock detection. Reviewers who churn on a question the briefing (or
// the spec) never decided do it in a way anyone can see from the rounds
// alone, whatever rule text they write: the implementer gives one
// reviewer what it asks for, which makes another block; it gives that one
// what it asks for, and the first blocks again on the input it blocked on
// before. So the rule is:
//
//	alternating: in rounds a < b < c, with the grader passing in every
//	round from a to c, reviewer X blocks on some inputs in a; in b X gives
//	a valid verdict that no longer blocks on them while Y blocks on
//	inputs it did not block on in a; in c Y gives a valid verdict that no
//	longer blocks on those while X blocks again on an input of round a.
//
// The rule text is never compared: two reviewers citing the same spec
// section for opposite demands deadlock just as two citing different
// rules do. A round in which a reviewer gave no valid verdict (a timeout,
// a crash) says nothing about it: it is neither satisfied nor blocking
// there, so a timeout can delay the detection but never fake a swap. A
// grader that does not pass breaks the pattern: the implementer then has
// something concrete to fix, and churn is not yet proven.
//
// Inputs are compared by a key: runs of white space folded, except for an
// input that is only white space (a lone newline, a tab, a space), which
// is kept exactly: those are different inputs, and a parser's answer on
// each is exactly the kind of question a briefing leaves open.

// Deadlock is the contested question and the evidence for it.
type Deadlock struct {
	// Question is the contested input as first written; Inputs lists
	// every input of the alternation (Question first).
	Question string   `json:"question"`
	Inputs   []string `json:"inputs,omitempty"`
	// Kind is "alternating" (records made before it may say "opposed"
	// or "flip-flop", the rules walkie used then).
	Kind     string     `json:"kind"`
	Round    int        `json:"round"`    // the round in which it was seen
	Summary  string     `json:"summary"`  // one line
	Evidence []Evidence `json:"evidence"` // every blocking objection on the inputs, in round order
}

// KindAlternating is the one deadlock signal (see above).
const KindAlternating = "alternating"

// Evidence is one blocking objection on the contested question.
type Evidence struct {
	Round    int    `json:"round"`
	Reviewer string `json:"reviewer"`
	Objection
}

// roundBlockers is one round as deadlock detection sees it: the blocking
// objections of each reviewer with a valid verdict (a reviewer without one
// is absent from Valid), whether the grader passed, and the hash of the
// workspace the round judged ("" when unknown), which the summary reports.
type roundBlockers struct {
	Round        int
	GraderPassed bool
	Valid        map[string][]Objection
	Workspace    string
}

// questionKey is the key an input is compared by.
func questionKey(input string) string {
	if strings.TrimSpace(input) == "" {
		return input
	}
	return strings.Join(strings.Fields(input), " ")
}

// keysOf is the set of input keys a reviewer blocks on in a round; ok is
// false when it gave no valid verdict there.
func keysOf(r roundBlockers, reviewer string) (keys map[string]bool, ok bool) {
	obs, ok := r.Valid[reviewer]
	if !ok {
		return nil, false
	}
	keys = map[string]bool{}
	for _, o := range obs {
		keys[questionKey(o.FailingInput)] = true
	}
	return keys, true
}

func intersects(a, b map[string]bool) bool {
	for k := range a {
		if b[k] {
			return true
		}
	}
	return false
}

// newIn is what b has that a has not.
func newIn(b, a map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range b {
		if !a[k] {
			out[k] = true
		}
	}
	return out
}

// swap reports whether the blocking side moved from x (in round a) to y
// (in round b): x, with a valid verdict in b, no longer blocks on what it
// blocked on in a, and y blocks in b on inputs it did not block on in a.
// It returns y's new inputs.
func swap(a, b roundBlockers, x, y string) map[string]bool {
	xa, ok1 := keysOf(a, x)
	xb, ok2 := keysOf(b, x)
	ya, ok3 := keysOf(a, y)
	yb, ok4 := keysOf(b, y)
	if !ok1 || !ok2 || !ok3 || !ok4 || len(xa) == 0 || intersects(xa, xb) {
		return nil
	}
	if fresh := newIn(yb, ya); len(fresh) > 0 {
		return fresh
	}
	return nil
}

// detectDeadlock applies the rule to the rounds so far (oldest first) and
// returns the earliest alternation, or nil.
func detectDeadlock(rounds []roundBlockers) *Deadlock {
	for ci := range rounds {
		for bi := range ci {
			for ai := range bi {
				if d := alternation(rounds[ai : ci+1]); d != nil {
					return d
				}
			}
		}
	}
	return nil
}

// alternation checks rounds[0] = a, some middle round b, and the last
// round c, with the grader passing throughout.
func alternation(span []roundBlockers) *Deadlock {
	for _, r := range span {
		if !r.GraderPassed {
			return nil
		}
	}
	a, c := span[0], span[len(span)-1]
	for _, b := range span[1 : len(span)-1] {
		for _, x := range sortedNames(a.Valid) {
			for _, y := range sortedNames(b.Valid) {
				if x == y {
					continue
				}
				yKeys := swap(a, b, x, y)
				if yKeys == nil {
					continue
				}
				xBack := swap(b, c, y, x)
				xa, _ := keysOf(a, x)
				if xBack == nil || !intersects(xBack, xa) {
					continue
				}
				back := map[string]bool{}
				for k := range xBack {
					if xa[k] {
						back[k] = true
					}
				}
				return describe(span, a, b, c, x, y, back, yKeys)
			}
		}
	}
	return nil
}

// describe builds the deadlock's question, summary and evidence: every
// blocking objection of x and y on the alternating inputs, rounds a to c.
func describe(span []roundBlockers, a, b, c roundBlockers, x, y string, xKeys, yKeys map[string]bool) *Deadlock {
	keys := maps.Clone(xKeys)
	maps.Copy(keys, yKeys)
	d := &Deadlock{Kind: KindAlternating, Round: c.Round}
	first := map[string]string{} // key → the input as first written
	var order []string
	for _, r := range span {
		for _, who := range []string{x, y} {
			for _, o := range r.Valid[who] {
				k := questionKey(o.FailingInput)
				if !keys[k] {
					continue
				}
				if _, seen := first[k]; !seen {
					first[k] = o.FailingInput
					order = append(order, k)
				}
				d.Evidence = append(d.Evidence, Evidence{r.Round, who, o})
			}
		}
	}
	for _, k := range order {
		d.Inputs = append(d.Inputs, first[k])
	}
	// The question is x's recurring input: the one the run came back to.
	for _, k := range order {
		if xKeys[k] {
			d.Question = first[k]
			break
		}
	}
	slices.SortStableFunc(d.Evidence, func(p, q Evidence) int { return p.Round - q.Round })
	// What was seen, and nothing inferred: that x stopped blocking is no
	// proof that the implementer met its objection (the workspace may not
	// have changed at all).
	xIn, yIn := inputList(first, xKeys, order), inputList(first, yKeys, order)
	d.Summary = fmt.Sprintf("%s blocked on %s in round %d; in round %d %s no longer did, and %s blocked on %s; in round %d %s blocked on %s again; the grader passed in every round from %d to %d",
		x, xIn, a.Round, b.Round, x, y, yIn, c.Round, x, xIn, a.Round, c.Round)
	if w := workspaceWords(a, b, c); w != "" {
		d.Summary += ", and " + w
	}
	return d
}

// workspaceWords says whether the workspace changed between the rounds a,
// b and c, from the hashes of what each round judged; "" when a round's
// hash is unknown (a record from before rounds kept it).
func workspaceWords(a, b, c roundBlockers) string {
	if a.Workspace == "" || b.Workspace == "" || c.Workspace == "" {
		return ""
	}
	ab, bc := a.Workspace != b.Workspace, b.Workspace != c.Workspace
	between := func(p, q roundBlockers) string { return fmt.Sprintf("between rounds %d and %d", p.Round, q.Round) }
	switch {
	case !ab && !bc:
		return fmt.Sprintf("the workspace was the same in rounds %d, %d and %d (%s)", a.Round, b.Round, c.Round, shortHash(a.Workspace))
	case ab && bc:
		return "the workspace changed " + between(a, b) + " and " + between(b, c)
	case ab:
		return "the workspace changed " + between(a, b) + " and not " + between(b, c)
	}
	return "the workspace did not change " + between(a, b) + " and changed " + between(b, c)
}

// shortHash is a workspace hash ("sha256:" and 64 hex digits) as a line
// of prose shows it: its algorithm and 12 digits.
func shortHash(h string) string {
	algo, hex, ok := strings.Cut(h, ":")
	if !ok {
		return h[:min(len(h), 12)]
	}
	return algo + ":" + hex[:min(len(hex), 12)]
}

// inputList names the inputs of keys, quoted, in order.
func inputList(first map[string]string, keys map[string]bool, order []string) string {
	d := Deadlock{}
	for _, k := range order {
		if keys[k] {
			d.Inputs = append(d.Inputs, first[k])
		}
	}
	return d.InputWords()
}

func sortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// quoteInput shows a reviewer's text in a line of prose, JSON-quoted:
// safe in the record (see record.go).
func quoteInput(s string) string { return quoteJSON(s) }

// inputs is every contested input (a record written before Inputs
// existed has its Question only).
func (d *Deadlock) inputs() []string {
	if len(d.Inputs) > 0 {
		return d.Inputs
	}
	return []string{d.Question}
}

// InputWords names the contested inputs in prose, each JSON-quoted.
func (d *Deadlock) InputWords() string {
	in := d.inputs()
	parts := make([]string, len(in))
	for i, s := range in {
		parts[i] = quoteInput(s)
	}
	if len(parts) == 1 {
		return "the input " + parts[0]
	}
	return "the inputs " + listWords(parts)
}
