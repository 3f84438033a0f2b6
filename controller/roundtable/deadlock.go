package roundtable

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
)

// Deadlock detection. Reviewers that churn on a question the briefing
// never decided do it on one edge case: the same failing input comes back
// with demands that cannot all be met. So a question is keyed by its
// failing input (trimmed, runs of white space folded), and two signals
// end the run:
//
//   - flip-flop: a question is raised, then resolved (nobody raises it in a
//     round where everyone who raised it gave a valid verdict), then
//     raised again;
//   - opposed: reviewer A blocks on an input in one round; in a later
//     round A, satisfied, no longer raises it, and reviewer B blocks on the
//     same input under a different rule: B objects to what A demanded.
//
// The key is deliberately literal. A question written two ways is not
// seen as one, which costs rounds up to the cap; folding unlike inputs
// together would stop runs that were making progress.

// Deadlock is the contested question and the evidence for it.
type Deadlock struct {
	Question string     `json:"question"` // the failing input, as first written
	Kind     string     `json:"kind"`     // "flip-flop" or "opposed"
	Round    int        `json:"round"`    // the round in which it was seen
	Summary  string     `json:"summary"`  // one line
	Evidence []Evidence `json:"evidence"` // every blocking objection on the question, in round order
}

// Evidence is one blocking objection on the contested question.
type Evidence struct {
	Round    int    `json:"round"`
	Reviewer string `json:"reviewer"`
	Objection
}

// roundBlockers is one round as deadlock detection sees it: the blocking
// objections of each reviewer with a valid verdict; a reviewer without one
// is absent from Valid.
type roundBlockers struct {
	Round int
	Valid map[string][]Objection
}

func questionKey(input string) string {
	return strings.Join(strings.Fields(input), " ")
}

func ruleKey(rule string) string {
	s := strings.ToLower(strings.Join(strings.Fields(rule), " "))
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// raise is one reviewer blocking on a question in a round.
type raise struct {
	round    int
	reviewer string
	o        Objection
}

// detectDeadlock looks for either signal in the rounds so far (oldest
// first) and returns the one seen earliest.
func detectDeadlock(rounds []roundBlockers) *Deadlock {
	byKey := map[string][]raise{}
	var keys []string // in order of first appearance
	for _, r := range rounds {
		for _, reviewer := range sortedNames(r.Valid) {
			for _, o := range r.Valid[reviewer] {
				k := questionKey(o.FailingInput)
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], raise{r.Round, reviewer, o})
			}
		}
	}
	var found *Deadlock
	for _, k := range keys {
		if d := opposed(rounds, byKey[k]); d != nil && (found == nil || d.Round < found.Round) {
			found = d
		}
		if d := flipFlop(rounds, byKey[k]); d != nil && (found == nil || d.Round < found.Round) {
			found = d
		}
	}
	return found
}

// opposed: b blocks on the question after a, under another rule, in a
// round where a gave a valid verdict and no longer raised it.
func opposed(rounds []roundBlockers, raises []raise) *Deadlock {
	for _, b := range raises {
		for _, a := range raises {
			if a.round >= b.round || a.reviewer == b.reviewer || ruleKey(a.o.Rule) == ruleKey(b.o.Rule) {
				continue
			}
			r := roundOf(rounds, b.round)
			if _, valid := r.Valid[a.reviewer]; !valid || raisedBy(raises, b.round, a.reviewer) {
				continue
			}
			return &Deadlock{Question: raises[0].o.FailingInput, Kind: "opposed", Round: b.round, Evidence: evidenceOf(raises),
				Summary: fmt.Sprintf("%s blocked on the input %s in round %d under the rule %s; once that was met, %s blocked on the same input in round %d under the rule %s",
					a.reviewer, quoteInput(a.o.FailingInput), a.round, quoteInput(a.o.Rule), b.reviewer, b.round, quoteInput(b.o.Rule))}
		}
	}
	return nil
}

// flipFlop: raised, then resolved, then raised again.
func flipFlop(rounds []roundBlockers, raises []raise) *Deadlock {
	const (
		never = iota
		raised
		resolved
	)
	state, first, fixed := never, 0, 0
	for i, r := range rounds {
		switch {
		case raisedBy(raises, r.Round, ""):
			if state == resolved {
				return &Deadlock{Question: raises[0].o.FailingInput, Kind: "flip-flop", Round: r.Round, Evidence: evidenceOf(raises),
					Summary: fmt.Sprintf("the input %s was blocked on in round %d, resolved in round %d and blocked on again in round %d",
						quoteInput(raises[0].o.FailingInput), first, fixed, r.Round)}
			}
			if state == never {
				first = r.Round
			}
			state = raised
		case state == raised && i > 0 && everyRaiserValid(raises, rounds[i-1].Round, r):
			state, fixed = resolved, r.Round
		}
	}
	return nil
}

// everyRaiserValid reports whether everyone who raised the question in
// round prev gave a valid verdict in cur: only then does its absence from
// cur mean resolved rather than unknown.
func everyRaiserValid(raises []raise, prev int, cur roundBlockers) bool {
	for _, x := range raises {
		if x.round != prev {
			continue
		}
		if _, ok := cur.Valid[x.reviewer]; !ok {
			return false
		}
	}
	return true
}

func raisedBy(raises []raise, round int, reviewer string) bool {
	for _, x := range raises {
		if x.round == round && (reviewer == "" || x.reviewer == reviewer) {
			return true
		}
	}
	return false
}

func roundOf(rounds []roundBlockers, round int) roundBlockers {
	for _, r := range rounds {
		if r.Round == round {
			return r
		}
	}
	return roundBlockers{Round: round}
}

func evidenceOf(raises []raise) []Evidence {
	ev := make([]Evidence, 0, len(raises))
	for _, x := range raises {
		ev = append(ev, Evidence{x.round, x.reviewer, x.o})
	}
	slices.SortStableFunc(ev, func(a, b Evidence) int {
		if a.Round != b.Round {
			return a.Round - b.Round
		}
		return strings.Compare(a.Reviewer, b.Reviewer)
	})
	return ev
}

func sortedNames[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// quoteInput shows a reviewer's text in a line of prose, JSON-quoted:
// safe in the record (see roundtable_record.go).
func quoteInput(s string) string { return quoteJSON(s) }
