package engine

import (
	"cmp"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session/usage"
	"github.com/walkie-sh/walkie/walkie"
)

// Usage reads the agent's own report of what an attempt consumed from its
// plain-text transcript. A CLI that states a cost is believed; tokens
// alone are priced from the config's dated table and marked as an
// estimate.
func (e *Engine) Usage(a config.Agent, textPath string) *Usage {
	u, _, _ := e.readOutput(a, textPath)
	return u
}

// readOutput reads what the transcript says: the usage, the model that
// ran (when the output names it) and what the CLI said of how it went.
func (e *Engine) readOutput(a config.Agent, textPath string) (*Usage, string, usage.Why) {
	if a.Usage == "" || a.Usage == config.UsageNone || textPath == "" {
		return nil, "", usage.Why{}
	}
	text, err := walkie.ReadRegular(textPath)
	if err != nil {
		return nil, "", usage.Why{}
	}
	why := usage.Explain(a.Usage, text)
	r, ok := usage.Parse(a.Usage, text)
	if !ok {
		return &Usage{Kind: CostUnknown, CostSource: "unknown (its output holds no usage report)"}, "", why
	}
	u, refused := e.price(a, r)
	if refused {
		// Not a gap in the config, which walkie says before the first
		// turn: figures nobody can have spent, said once where they came.
		e.log.Warn("walkie refused the figures the CLI printed; the attempt's cost counts as unknown",
			zap.String("agent", a.Name), zap.String("cost_source", u.CostSource), zap.String("transcript", textPath))
	}
	return u, r.Model, why
}

// price turns a CLI's report into an attempt's usage, of the kind its
// figure is. refused says its figures, or the estimate made of them,
// could not be believed (see usage.CheckCost).
func (e *Engine) price(a config.Agent, r usage.Report) (u *Usage, refused bool) {
	if r.Refused != "" {
		return &Usage{Kind: CostUnknown, CostSource: "unknown (walkie refused the figures: " + r.Refused + ")"}, true
	}
	u = &Usage{InputTokens: r.InputTokens, CachedInputTokens: r.CachedInputTokens, OutputTokens: r.OutputTokens}
	if r.HasCost {
		u.CostUSD, u.Kind, u.CostSource = r.CostUSD, CostReported, "reported"
		return u, false
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
			u.Kind, u.CostSource = CostUnknown, "unknown (model "+cmp.Or(m.Name, "unnamed")+" not in the pricing table)"
			return u, false
		}
		total += cost
	}
	if err := usage.CheckCost(total); err != nil {
		// The table's price, not the CLI, made this one: still no figure
		// to believe.
		u.Kind, u.CostSource = CostUnknown, "unknown (walkie refused its estimate from the pricing table: "+err.Error()+")"
		return u, true
	}
	u.CostUSD, u.Kind, u.CostSource = total, CostEstimated, "estimated (pricing as of "+e.cfg.Pricing.AsOf+")"
	if r.Partial {
		u.Kind, u.Partial = CostPartial, true
		u.CostSource = "estimated from the usage it streamed before it was ended (pricing as of " + e.cfg.Pricing.AsOf + "); the rest is unknown"
	}
	return u, false
}

// Unpriced says why the cost of a's turns cannot be told, and how to fix
// it in the config; "" when it can (as far as the config shows before a
// turn: a model the CLI picks itself, as gemini's router does, is found
// out only from its output).
func Unpriced(cfg *config.Config, a config.Agent) string {
	where := cmp.Or(cfg.Path, config.FileName)
	switch a.Usage {
	case "", config.UsageNone:
		return fmt.Sprintf("%s reports no usage (usage: none), so its turns' cost is unknown: set agents.%s.usage in %s to the format its output has (%s), if it has one",
			a.Name, a.Name, where, strings.Join([]string{config.UsageClaudeJSON, config.UsageCodexJSONL, config.UsageGeminiJSON}, ", "))
	case config.UsageClaudeJSON:
		return "" // claude states its own cost
	case config.UsageCodexJSONL:
		if a.Model == "" {
			return fmt.Sprintf("%s's output does not name its model, and agents.%s.model is empty, so its tokens cannot be priced: set model: in %s", a.Name, a.Name, where)
		}
	}
	if a.Model != "" {
		if _, ok := cfg.Pricing.Lookup(a.Model); !ok {
			return fmt.Sprintf("model %s (agent %s) is not in the pricing table: add pricing.models.%s: {input: USD, output: USD} (per million tokens) to %s",
				a.Model, a.Name, a.Model, where)
		}
	}
	return ""
}
