package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/config"
)

func TestUsage(t *testing.T) {
	e := New(config.Default(), nil)
	claude := `chatter
{"type":"result","total_cost_usd":0.0123,"usage":{"input_tokens":100,"output_tokens":20}}
`
	codex := `{"type":"turn.completed","usage":{"input_tokens":1000000,"output_tokens":100000}}
`
	// gemini's router on a small model, then the turn on a bigger one.
	gemini := `{"type":"result","status":"success","stats":{"models":{"gemini-2.5-flash-lite":{"input_tokens":1000000,"output_tokens":0,"total_tokens":1000000},"gemini-2.5-pro":{"input_tokens":1000000,"output_tokens":100000,"total_tokens":1100000}}}}
`
	for _, c2 := range []struct {
		name, format, model, text string
		want                      *Usage // nil: no usage recorded; its Kind is compared too
		source                    string // prefix of CostSource
	}{
		{"not configured", "", "", claude, nil, ""},
		{"switched off", config.UsageNone, "", claude, nil, ""},
		{"reported by the CLI", config.UsageClaudeJSON, "", claude, &Usage{Kind: CostReported, InputTokens: 100, OutputTokens: 20, CostUSD: 0.0123}, "reported"},
		{"priced from the table", config.UsageCodexJSONL, "gpt-5-codex", codex, &Usage{Kind: CostEstimated, InputTokens: 1000000, OutputTokens: 100000, CostUSD: 1.25 + 1.0}, "estimated (pricing as of "},
		{"model not in the table", config.UsageCodexJSONL, "no-such-model", codex, &Usage{Kind: CostUnknown, InputTokens: 1000000, OutputTokens: 100000}, "unknown (model no-such-model"},
		{"unnamed model", config.UsageCodexJSONL, "", codex, &Usage{Kind: CostUnknown, InputTokens: 1000000, OutputTokens: 100000}, "unknown (model unnamed"},
		{"each model at its price", config.UsageGeminiJSON, "", gemini, &Usage{Kind: CostEstimated, InputTokens: 2000000, OutputTokens: 100000, CostUSD: 0.10 + 1.25 + 1.0}, "estimated (pricing as of "},
		{"a model with no tokens needs no price", config.UsageGeminiJSON, "", strings.Replace(gemini, `"gemini-2.5-pro"`, `"unpriced-model":{"input_tokens":0,"output_tokens":0},"gemini-2.5-pro"`, 1), &Usage{Kind: CostEstimated, InputTokens: 2000000, OutputTokens: 100000, CostUSD: 0.10 + 1.25 + 1.0}, "estimated (pricing as of "},
		{"the config's model prices all", config.UsageGeminiJSON, "gemini-2.5-pro", gemini, &Usage{Kind: CostEstimated, InputTokens: 2000000, OutputTokens: 100000, CostUSD: 2.5 + 1.0}, "estimated (pricing as of "},
		{"no report in the output", config.UsageClaudeJSON, "", "just text\n", &Usage{Kind: CostUnknown}, "unknown (its output holds no usage report)"},
		// Figures no session can have spent are refused, and say so
		// (issue 27, item 6).
		{"a negative cost", config.UsageClaudeJSON, "", strings.Replace(claude, "0.0123", "-6", 1), &Usage{Kind: CostUnknown},
			"unknown (walkie refused the figures: the CLI reported a cost of $-6, a negative one)"},
		{"an absurd cost", config.UsageClaudeJSON, "", strings.Replace(claude, "0.0123", "1e300", 1), &Usage{Kind: CostUnknown}, "unknown (walkie refused the figures: the CLI reported a cost of $1e+300, more than"},
		{"negative tokens", config.UsageCodexJSONL, "gpt-5-codex", strings.Replace(codex, "1000000", "-1000000", 1), &Usage{Kind: CostUnknown}, "unknown (walkie refused the figures: the CLI reported -1000000 input tokens"},
		{"an absurd estimate", config.UsageCodexJSONL, "gpt-5-codex", strings.Replace(codex, "1000000", "9000000000", 1), &Usage{Kind: CostUnknown, InputTokens: 9000000000, OutputTokens: 100000},
			"unknown (walkie refused its estimate from the pricing table: a cost of $11251, more than the $10000 one session can cost)"},
	} {
		t.Run(c2.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.txt")
			if err := os.WriteFile(path, []byte(c2.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got := e.Usage(config.Agent{Usage: c2.format, Model: c2.model}, path)
			if c2.want == nil {
				if got != nil {
					t.Errorf("got %+v, want none", got)
				}
				return
			}
			if got == nil || got.Kind != c2.want.Kind || got.InputTokens != c2.want.InputTokens || got.OutputTokens != c2.want.OutputTokens ||
				got.CostUSD < c2.want.CostUSD-1e-9 || got.CostUSD > c2.want.CostUSD+1e-9 || !strings.HasPrefix(got.CostSource, c2.source) {
				t.Errorf("got %+v, want %+v from %q", got, c2.want, c2.source)
			}
		})
	}
	if got := e.Usage(config.Agent{Usage: config.UsageClaudeJSON}, filepath.Join(t.TempDir(), "missing")); got != nil {
		t.Errorf("a missing transcript gave %+v", got)
	}
}
