package controller

import (
	"os"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session/usage"
)

// usage reads the agent's own report of what the attempt consumed. A CLI
// that states a cost is believed; tokens alone are priced from the
// config's dated table and marked as an estimate.
func (c *controller) usage(a config.Agent, textPath string) *Usage {
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
	switch model := firstNonEmpty(a.Model, r.Model); {
	case r.HasCost:
		u.CostUSD, u.CostSource = r.CostUSD, "reported"
	default:
		if cost, ok := c.opts.Config.Pricing.Cost(model, r.InputTokens, r.OutputTokens); ok {
			u.CostUSD, u.CostSource = cost, "estimated (pricing as of "+c.opts.Config.Pricing.AsOf+")"
		} else {
			u.CostSource = "unknown (model " + firstNonEmpty(model, "unnamed") + " not in the pricing table)"
		}
	}
	return u
}
