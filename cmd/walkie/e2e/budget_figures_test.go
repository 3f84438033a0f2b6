package e2e

import (
	"strings"
	"testing"
)

// An agent that prints a cost no session can have spent — negative, not
// a number, absurd — does not move the budget by it: the attempt's cost is
// unknown, counted at the documented estimate, and the log says why
// (issue 27, item 6: a total_cost_usd of -6 let $6 be spent against
// $2.50). b reports $1 a turn, so before the 4th turn the debate has
// spent $1 and counts two attempts of unknown cost at $1 each: $3, over
// the $2.50 budget.
func TestBudgetRefusesBadFigures(t *testing.T) {
	for _, c := range []struct{ name, cost, refused string }{
		{"negative", "-6", "a cost of $-6, a negative one"},
		{"absurd", "1e300", "a cost of $1e+300, more than the $10000 one session can cost"},
		{"not a number", ".nan", ""}, // not JSON: no result line at all
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 10, top: "budget_usd: 2.5",
				scripts: map[string]string{"a": "usage: true\ncost_usd: " + c.cost, "b": "usage: true\ncost_usd: 1"}})
			r := d.auto(13)
			recs := d.turns()
			d.wantOutcomes(recs, "accepted", "accepted", "accepted")
			for _, rec := range recs {
				if rec.Agent != "a" {
					continue
				}
				if u := rec.Usage; u == nil || u.CostKind != "unknown" || u.CostUSD != 0 || !strings.Contains(u.CostSource, c.refused) {
					t.Errorf("a's attempt: %+v", u)
				}
			}
			st := d.state()
			if st.Status != "over-budget" || st.CostUSD != 1 || st.UnknownCosts != 2 ||
				!strings.Contains(st.Reason, "spent $1.00 of a $2.50 budget, counting 2 attempts of unknown cost as $1.00 each") {
				t.Errorf("state %+v", st)
			}
			if c.refused != "" && !strings.Contains(r.Stderr, "walkie refused the figures the CLI printed") {
				t.Errorf("the log does not say why:\n%s", r.Stderr)
			}
			d.noProcessesLeft()
		})
	}
}
