package term

import (
	"fmt"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// Money is a cost in dollars, "~" before it when it is an estimate.
func Money(usd float64, estimated bool) string {
	s := walkie.Money(usd)
	if estimated {
		s = "~" + s
	}
	return s
}

// CostCell is an attempt's cost: "$0.0042" as the CLI reported it,
// "~$0.0042" estimated from the pricing table, "~$0.0042+?" a figure the
// CLI did not complete (ended before its final event), "?" unknown.
func CostCell(u *controller.Usage) string {
	switch {
	case !u.Known():
		return "?"
	case !u.Complete():
		return Money(u.CostUSD, true) + "+?"
	}
	return Money(u.CostUSD, u.Estimate())
}

// TotalCost sums what the attempts cost and says how many of them could
// not tell (their agent reports no usage, or ended before it did): a
// total that leaves some out must not read as the whole.
func TotalCost(recs []controller.TurnRecord) string {
	total, estimated, known, unknown := 0.0, false, 0, 0
	for _, r := range recs {
		usd, complete := r.Usage.Cost()
		if !complete {
			unknown++
		}
		if !r.Usage.Known() {
			continue
		}
		total += usd
		estimated = estimated || r.Usage.Estimate()
		known++
	}
	switch {
	case known == 0 && unknown == 0:
		return ""
	case known == 0:
		return fmt.Sprintf("total cost unknown: none of the %s told its cost", walkie.Count(unknown, "attempt", "attempts"))
	case unknown > 0:
		return fmt.Sprintf("total cost %s, not counting %s whose cost is unknown", Money(total, estimated), walkie.Count(unknown, "attempt", "attempts"))
	}
	return "total cost " + Money(total, estimated)
}

// UnknownCosts says how much of a debate's cost is unknown, and what a
// budget counts it as; "" when none is.
func UnknownCosts(n int, estimate, budget float64) string {
	if n == 0 {
		return ""
	}
	s := "+ " + walkie.Count(n, "attempt", "attempts") + " of unknown cost"
	if budget > 0 {
		s += fmt.Sprintf(", counted as %s against the %s budget", walkie.Money(estimate), walkie.Money(budget))
	}
	return s
}

func nonNil(r []controller.TurnRecord) []controller.TurnRecord {
	if r == nil {
		return []controller.TurnRecord{}
	}
	return r
}
