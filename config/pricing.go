package config

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// Pricing is a dated price table for CLIs that report tokens but no cost
// (codex, gemini). Figures derived from it are estimates and must be logged
// as such, with AsOf.
type Pricing struct {
	AsOf   string           // date the prices were checked, YYYY-MM-DD
	Models map[string]Price // by model name; see Lookup for matching
}

// Price is USD per million tokens.
type Price struct {
	Input  float64
	Output float64
}

// PricingAsOf is the date of the built-in table.
const PricingAsOf = "2026-11-30"

// defaultPricing returns the built-in table. ESTIMATES: list prices as
// published by the vendors for standard (non-batch, short-context) use,
// without cache discounts. Override them in the config's pricing: section.
func defaultPricing() Pricing {
	return Pricing{
		AsOf: PricingAsOf,
		Models: map[string]Price{
			// The models the pinned CLIs run by default (checked 2026-11-30):
			// codex-cli 0.171.0's gpt-6.2-sol; gemini 0.61.0 routes each turn
			// through gemini-3.5-flash-lite to gemini-3.8-flash, whose launch
			// price runs to 2026-12-31, and falls back to (or plans with)
			// gemini-3.1-pro-preview, whose -customtools endpoint is the same
			// model. claude states its own cost.
			"gpt-6.2-sol":                        {Input: 2, Output: 10},
			"gemini-3.8-flash":                   {Input: 0.75, Output: 3.75},
			"gemini-3.5-flash-lite":              {Input: 0.30, Output: 2.50},
			"gemini-3.1-pro-preview":             {Input: 2, Output: 12},
			"gemini-3.1-pro-preview-customtools": {Input: 2, Output: 12},
			// claude 2.1.197's default: claude states its own cost, and
			// its figures ($0.0137 for 2400 in, 68 out) are these rates.
			// Listed for the turns claude was ended before it said.
			"claude-opus-4-8": {Input: 5, Output: 25},
			// Checked 2026-11-01.
			"claude-opus-4-5":       {Input: 5, Output: 25},
			"claude-sonnet-4-5":     {Input: 3, Output: 15},
			"claude-haiku-4-5":      {Input: 1, Output: 5},
			"gpt-5":                 {Input: 1.25, Output: 10},
			"gpt-5-codex":           {Input: 1.25, Output: 10},
			"gpt-5-mini":            {Input: 0.25, Output: 2},
			"gemini-2.5-pro":        {Input: 1.25, Output: 10},
			"gemini-2.5-flash":      {Input: 0.30, Output: 2.50},
			"gemini-2.5-flash-lite": {Input: 0.10, Output: 0.40},
			"gemini-3-pro-preview":  {Input: 2, Output: 12},
		},
	}
}

// Lookup finds the price of model: an exact entry, else an entry followed
// by a date stamp (digits and dashes, at least 6 digits) or "-latest" (so
// "claude-sonnet-4-5-20250929" is priced as "claude-sonnet-4-5"). Any other
// suffix is another model ("gpt-5-nano" is not "gpt-5"). Case is ignored.
func (p Pricing) Lookup(model string) (Price, bool) {
	model = strings.ToLower(strings.TrimSpace(model))
	if model == "" {
		return Price{}, false
	}
	keys := slices.Collect(maps.Keys(p.Models))
	// Longest first, then by name, so the match does not depend on map order.
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	for _, k := range keys {
		if strings.ToLower(k) == model {
			return p.Models[k], true
		}
	}
	for _, k := range keys {
		rest, ok := strings.CutPrefix(model, strings.ToLower(k)+"-")
		if ok && (rest == "latest" || isDateStamp(rest)) {
			return p.Models[k], true
		}
	}
	return Price{}, false
}

// Cost estimates the USD cost of in input and out output tokens of model.
// ok is false when the model is not in the table.
func (p Pricing) Cost(model string, in, out int64) (usd float64, ok bool) {
	pr, ok := p.Lookup(model)
	if !ok {
		return 0, false
	}
	return (float64(in)*pr.Input + float64(out)*pr.Output) / 1e6, true
}

// isDateStamp reports whether s looks like 20250929 or 2025-08-07: digits
// and dashes with at least 6 digits, so "5" in "claude-sonnet-4-5" is not one.
func isDateStamp(s string) bool {
	digits := 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r != '-':
			return false
		}
	}
	return digits >= 6
}
