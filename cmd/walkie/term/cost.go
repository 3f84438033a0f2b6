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

// Tokens is a count as a person reads it: 812, 12.3k, 1.74M.
func Tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.2fM", float64(n)/1e6)
}

// TokensCell is an attempt's tokens: "12.3k in (8.1k cached), 212 out"
// as its CLI reported them, "~14.2 KB sent" for one that reports none,
// "-" when neither is known.
func TokensCell(u *controller.Usage, sentBytes int64) string {
	if !u.HasTokens() {
		if sentBytes > 0 {
			return fmt.Sprintf("~%.1f KB sent", float64(sentBytes)/1024)
		}
		return "-"
	}
	s := Tokens(u.InputTokens) + " in"
	if u.CachedInputTokens > 0 {
		s += " (" + Tokens(u.CachedInputTokens) + " cached)"
	}
	return s + ", " + Tokens(u.OutputTokens) + " out"
}

// TotalTokens sums the tokens the attempts' CLIs reported: "tokens 48.2k
// in (20.1k cached), 3.1k out"; "" when none reported any.
func TotalTokens(recs []controller.TurnRecord) string {
	var total controller.Usage
	for _, r := range recs {
		total.AddTokens(r.Usage)
	}
	if !total.HasTokens() {
		return ""
	}
	return "tokens " + TokensCell(&total, 0)
}
