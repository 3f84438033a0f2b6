package config

import (
	"math"
	"testing"
	"time"
)

func TestCost(t *testing.T) {
	p := Default().Pricing
	tests := []struct {
		model   string
		in, out int64
		want    float64
		ok      bool
	}{
		{"gpt-5-codex", 1_000_000, 1_000_000, 11.25, true},
		{"gpt-5", 2_000_000, 0, 2.5, true},
		{"GPT-5", 0, 100_000, 1, true},
		{"claude-sonnet-4-5-20250929", 1_000_000, 0, 3, true}, // dated id → base entry
		{"gpt-5-2025-08-07", 1_000_000, 0, 1.25, true},
		{"claude-opus-4-5-latest", 1_000_000, 0, 5, true},
		{"gemini-2.5-flash-lite", 0, 1_000_000, 0.40, true},
		{"gpt-5-nano", 1, 1, 0, false},         // another model, not gpt-5
		{"claude-haiku-4-5-1", 1, 1, 0, false}, // a version, not a date
		{"gemini-2.5-flash", 1_000_000, 0, 0.30, true},
		{"gpt-5-codexx", 1, 1, 0, false}, // a prefix without "-" is another model
		{"unknown-model", 1, 1, 0, false},
		{"", 1, 1, 0, false},
		{"gpt-5-mini", 0, 0, 0, true},
	}
	for _, tt := range tests {
		got, ok := p.Cost(tt.model, tt.in, tt.out)
		if ok != tt.ok || math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Cost(%q, %d, %d) = %v, %v; want %v, %v", tt.model, tt.in, tt.out, got, ok, tt.want, tt.ok)
		}
	}
}

func TestPricingTableDated(t *testing.T) {
	p := Default().Pricing
	if _, err := time.Parse(time.DateOnly, p.AsOf); err != nil {
		t.Errorf("AsOf %q: %v", p.AsOf, err)
	}
	for m, pr := range p.Models {
		if pr.Input <= 0 || pr.Output < pr.Input {
			t.Errorf("%s: implausible price %+v", m, pr)
		}
	}
	// The codex preset's model must be priced, or its turns get no estimate.
	a, _ := Default().Agent("codex")
	if _, ok := p.Lookup(a.Model); !ok {
		t.Errorf("codex preset model %q not in the table", a.Model)
	}
}

func TestPricingOverride(t *testing.T) {
	c, err := Parse("w.yaml", []byte("pricing:\n  models:\n    gpt-5-codex: {input: 0, output: 0}\n    local-llama: {input: 0.01, output: 0.02}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if usd, ok := c.Pricing.Cost("gpt-5-codex", 1e6, 1e6); !ok || usd != 0 {
		t.Errorf("override not used: %v %v", usd, ok)
	}
	if usd, ok := c.Pricing.Cost("local-llama", 1e6, 1e6); !ok || math.Abs(usd-0.03) > 1e-12 {
		t.Errorf("new model: %v %v", usd, ok)
	}
	if c.Pricing.AsOf != PricingAsOf {
		t.Errorf("AsOf %q", c.Pricing.AsOf)
	}
}
