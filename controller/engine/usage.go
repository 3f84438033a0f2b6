package engine

import (
	"cmp"
	"os"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session/usage"
)

// Usage reads the agent's own report of what an attempt consumed from its
// plain-text transcript. A CLI that states a cost is believed; tokens
// alone are priced from the config's dated table and marked as an
// estimate.
func (e *Engine) Usage(a config.Agent, textPath string) *Usage {
	if a.Usage == "" || a.Usage == config.UsageNone || textPath == "" {
		return nil
	}
	text, err := os.ReadFile(textPath)
	if err != nil {
		return nil
	}
	r, ok := usage.Parse(a.Usage, text)
	if !ok {
		return &Usage{CostSource: "unknown"}
	}
	u := &Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
	if r.HasCost {
		u.CostUSD, u.CostSource = r.CostUSD, "reported"
		return u
	}
	// Each model's tokens at its own price (gemini routes a turn through
	// two); the config's model, when set, names what ran instead.
	models := r.Models
	if a.Model != "" || len(models) == 0 {
		models = []usage.ModelUsage{{Name: cmp.Or(a.Model, r.Model), InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}}
	}
	var total float64
	for _, m := range models {
		if m.InputTokens == 0 && m.OutputTokens == 0 && len(models) > 1 {
			continue // a model whose calls all failed costs nothing, priced or not
		}
		cost, ok := e.cfg.Pricing.Cost(m.Name, m.InputTokens, m.OutputTokens)
		if !ok {
			u.CostSource = "unknown (model " + cmp.Or(m.Name, "unnamed") + " not in the pricing table)"
			return u
		}
		total += cost
	}
	u.CostUSD, u.CostSource = total, "estimated (pricing as of "+e.cfg.Pricing.AsOf+")"
	return u
}
