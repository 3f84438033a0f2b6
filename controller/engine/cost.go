package engine

import (
	"context"
	"strings"

	"github.com/walkie-sh/walkie/session/usage"
	"github.com/walkie-sh/walkie/walkie"
)

// CostKind is how much of an attempt's cost its usage's figure is.
type CostKind string

// The kinds of cost, set where the figure is made (Engine.Usage).
const (
	// CostReported: the CLI stated the cost itself.
	CostReported CostKind = "reported"
	// CostEstimated: the CLI's whole usage, priced from the config's table.
	CostEstimated CostKind = "estimated"
	// CostPartial: what the CLI streamed before it was ended, priced; the
	// rest is unknown.
	CostPartial CostKind = "partial"
	// CostUnknown: no figure (no usage printed, a model the table lacks,
	// figures walkie refused).
	CostUnknown CostKind = "unknown"
)

// CostKind is u's kind of cost; a nil u (the agent reports no usage) is
// unknown. So is a figure nobody can have reported (negative, not a
// number, past usage.MaxCostUSD), wherever the usage came from: a remote
// worker's result or a turn log written before walkie checked figures.
func (u *Usage) CostKind() CostKind {
	if u == nil || usage.CheckCost(u.CostUSD) != nil ||
		usage.CheckTokens("input tokens", u.InputTokens) != nil || usage.CheckTokens("output tokens", u.OutputTokens) != nil {
		return CostUnknown
	}
	if u.Kind != "" {
		return u.Kind
	}
	// An attempt logged before the kind existed says it only in
	// its CostSource's words, which were these three.
	switch {
	case u.Partial:
		return CostPartial
	case u.CostSource == "reported":
		return CostReported
	case strings.HasPrefix(u.CostSource, "estimated"):
		return CostEstimated
	}
	return CostUnknown
}

// Known reports whether u has a figure at all, whole or partial.
func (u *Usage) Known() bool { return u.CostKind() != CostUnknown }

// Estimate reports whether u's figure is walkie's estimate from the
// pricing table (whole or partial) rather than the CLI's own.
func (u *Usage) Estimate() bool {
	k := u.CostKind()
	return k == CostEstimated || k == CostPartial
}

// Complete reports whether u is the whole cost of its attempt: reported
// by the CLI or priced from its whole usage. A nil u, an unknown cost or
// a partial one is not.
func (u *Usage) Complete() bool {
	k := u.CostKind()
	return k == CostReported || k == CostEstimated
}

// Cost is what u says was spent (0 for nil or unknown) and whether that is
// all.
func (u *Usage) Cost() (usd float64, complete bool) {
	if !u.Known() {
		return 0, false
	}
	return u.CostUSD, u.Complete()
}

// Spent is what the attempt is known to have cost, in US dollars: the
// figure a session slot is given back with, for the ledger's daily
// spending (0 when nothing is known).
func (u *Usage) Spent() float64 {
	usd, _ := u.Cost()
	return usd
}

// AcquireFunc waits for a session slot for agent (the limits: the
// ledger's Limiter). The attempt begins only once it returns; release
// gives the slot back with what the session cost (Usage.Spent).
type AcquireFunc func(ctx context.Context, agent string) (release func(usd float64), err error)

// AddTokens adds o's token counts (a nil o has none) to u's: the sums a
// log, a report and a run's summary show.
func (u *Usage) AddTokens(o *Usage) {
	if o == nil {
		return
	}
	u.InputTokens += o.InputTokens
	u.CachedInputTokens += o.CachedInputTokens
	u.OutputTokens += o.OutputTokens
}

// HasTokens reports whether u counts any tokens; a nil u does not.
func (u *Usage) HasTokens() bool { return u != nil && (u.InputTokens > 0 || u.OutputTokens > 0) }

// Charge adds an attempt's cost to the debate's state: what it is known
// to have cost and, when that is not all of it, one more attempt of
// unknown cost, which a budget counts by its estimate. It is the one place
// an attempt's usage becomes the debate's cost, for every kind of attempt.
func Charge(s *walkie.State, u *Usage) { s.AddCost(u.Cost()) }
