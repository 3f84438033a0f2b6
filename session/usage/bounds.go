package usage

import (
	"fmt"
	"math"
)

// What one session can believably have used. A figure past these, below
// zero or not a number at all is not a measurement: it is a broken or a
// hostile CLI (an agent can print a result line of its own), and believed
// it would offset a budget (a negative cost) or poison every sum after it
// (NaN, an overflow). The bounds are far above any real session: a
// million-token context re-read on each of a thousand model calls is 10⁹
// tokens, and a thousand dollars is more than any such session bills.
const (
	MaxTokens  int64   = 10_000_000_000 // input or output tokens of one session
	MaxCostUSD float64 = 10_000         // US dollars one session may cost
)

// CheckTokens says why n cannot be what a session used of what ("input
// tokens"), or nil when it can.
func CheckTokens(what string, n int64) error {
	switch {
	case n < 0:
		return fmt.Errorf("%d %s, a negative count", n, what)
	case n > MaxTokens:
		return fmt.Errorf("%d %s, more than the %d one session can use", n, what, MaxTokens)
	}
	return nil
}

// CheckCost says why usd cannot be what a session cost, or nil when it
// can.
func CheckCost(usd float64) error {
	switch {
	case math.IsNaN(usd) || math.IsInf(usd, 0):
		return fmt.Errorf("a cost of %v, not a number of dollars", usd)
	case usd < 0:
		return fmt.Errorf("a cost of $%g, a negative one", usd)
	case usd > MaxCostUSD:
		return fmt.Errorf("a cost of $%g, more than the $%g one session can cost", usd, MaxCostUSD)
	}
	return nil
}

// tally adds up token counts as a parser reads them, keeping the first
// figure it cannot believe. Each count is checked before it is added, so
// a negative one cannot offset the others and no sum can overflow into a
// plausible number.
type tally struct{ refused error }

// tokens is the sum of ns, each of them a count of what.
func (t *tally) tokens(what string, ns ...int64) int64 {
	var sum int64
	for _, n := range ns {
		if err := CheckTokens(what, n); err != nil {
			t.refuse(err)
			continue
		}
		// sum stays at most MaxTokens+1 and n at most MaxTokens: no
		// overflow, and a sum past the bound is still caught as one.
		sum = min(sum+n, MaxTokens+1)
	}
	return sum
}

func (t *tally) refuse(err error) {
	if t.refused == nil {
		t.refused = err
	}
}

// check refuses a report whose totals or per-model figures cannot be
// believed.
func (r *Report) check(t *tally) error {
	if t.refused != nil {
		return t.refused
	}
	if err := CheckTokens("input tokens", r.InputTokens); err != nil {
		return err
	}
	if err := CheckTokens("output tokens", r.OutputTokens); err != nil {
		return err
	}
	for _, m := range r.Models {
		if err := CheckTokens("input tokens of "+m.Name, m.InputTokens); err != nil {
			return err
		}
		if err := CheckTokens("output tokens of "+m.Name, m.OutputTokens); err != nil {
			return err
		}
	}
	if r.HasCost {
		return CheckCost(r.CostUSD)
	}
	return nil
}
