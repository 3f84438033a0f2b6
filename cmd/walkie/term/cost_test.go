package term

import (
	"testing"

	"github.com/walkie-sh/walkie/controller"
)

func TestTokens(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1.0k"}, {12_345, "12.3k"}, {999_949, "999.9k"}, {1_740_000, "1.74M"}} {
		if got := Tokens(c.n); got != c.want {
			t.Errorf("Tokens(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// A cell says what the CLI counted, else what walkie sent, else nothing;
// a figure of 0 cached tokens is left out rather than shown as "(0 cached)".
func TestTokensCell(t *testing.T) {
	for _, c := range []struct {
		name string
		u    *controller.Usage
		sent int64
		want string
	}{
		{"no usage, nothing sent", nil, 0, "-"},
		{"no usage, bytes sent", nil, 14_540, "~14.2 KB sent"},
		{"a cost but no tokens", &controller.Usage{CostUSD: 0.1}, 2048, "~2.0 KB sent"},
		{"tokens win over bytes", &controller.Usage{InputTokens: 12_300, OutputTokens: 212}, 9999, "12.3k in, 212 out"},
		{"cached", &controller.Usage{InputTokens: 12_300, CachedInputTokens: 8_100, OutputTokens: 212}, 0, "12.3k in (8.1k cached), 212 out"},
		{"output only", &controller.Usage{OutputTokens: 5}, 0, "0 in, 5 out"},
	} {
		if got := TokensCell(c.u, c.sent); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// The total counts only what CLIs reported: an attempt without usage adds
// nothing, and a run where none reported says nothing at all.
func TestTotalTokens(t *testing.T) {
	recs := []controller.TurnRecord{
		{Usage: &controller.Usage{InputTokens: 40_000, CachedInputTokens: 20_000, OutputTokens: 1_000}},
		{},
		{Usage: &controller.Usage{InputTokens: 8_200, CachedInputTokens: 100, OutputTokens: 2_100}},
	}
	if got, want := TotalTokens(recs), "tokens 48.2k in (20.1k cached), 3.1k out"; got != want {
		t.Errorf("total %q, want %q", got, want)
	}
	if got := TotalTokens(recs[1:2]); got != "" {
		t.Errorf("no usage anywhere: %q", got)
	}
}
