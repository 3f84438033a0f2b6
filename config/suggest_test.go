package config

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hbollon/go-edlib"
)

// TestSuggestRanking pins which name a typo suggests, against the real
// lists the decoder offers: a swap of two letters, a letter dropped, added
// or mistyped, case, and inputs too far from anything to guess.
func TestSuggestRanking(t *testing.T) {
	keys := sectionKeys()
	topKeys, defaultsKeys, agentKeys := keys[""], keys["defaults"], keys["agents.NAME"]
	tests := []struct {
		in         string
		candidates []string
		want       string
	}{
		// A swap ranks above a dropped letter: both are one edit away.
		{"modle", agentKeys, "model"},
		{"mdoel", agentKeys, "model"},
		{"moedl", agentKeys, "model"},
		{"models", agentKeys, "model"},
		{"Model", agentKeys, "model"},
		{"mod", agentKeys, "mode"},
		{"moed", agentKeys, "mode"},
		{"mdoe", agentKeys, "mode"},
		{"modle", []string{"mode", "model"}, "model"},
		{"modle", []string{"model", "mode"}, "model"},
		{"tiemout", agentKeys, "timeout"},
		{"timeuot", agentKeys, "timeout"},
		{"timout", agentKeys, "timeout"},
		{"Timeout", agentKeys, "timeout"},
		{"TIMEOUT", defaultsKeys, "timeout"},
		{"retires", agentKeys, "retries"},
		{"retires", defaultsKeys, "retries"},
		{"stal", agentKeys, "stall"},
		{"grcae", agentKeys, "grace"},
		{"kill-grace", agentKeys, "kill_grace"},
		{"killgrace", agentKeys, "kill_grace"},
		{"kill_grcae", defaultsKeys, "kill_grace"},
		{"comamnd", agentKeys, "command"},
		{"comand", agentKeys, "command"},
		{"promtp", agentKeys, "prompt"},
		{"debonuce", agentKeys, "debounce"},
		{"hoem", agentKeys, "home"},
		{"envallow", agentKeys, "env_allow"},
		{"env-allow", defaultsKeys, "env_allow"},
		{"home_file", agentKeys, "home_files"},
		{"homefiles", agentKeys, "home_files"},
		{"tmpdri", agentKeys, "tmpdir"},
		{"usgae", agentKeys, "usage"},
		{"rulse", agentKeys, "rules"},
		{"agent", topKeys, "agents"},
		{"defualts", topKeys, "defaults"},
		{"budget_sud", topKeys, "budget_usd"},
		{"notfiy", topKeys, "notify"},
		{"claud", PresetNames, "claude"},
		{"cluade", PresetNames, "claude"},
		{"cdoex", PresetNames, "codex"},
		{"Codex", PresetNames, "codex"},
		{"gemnii", PresetNames, "gemini"},
		{"inherti", homeModes, "inherit"},
		{"pirvate", homeModes, "private"},
		{"promt", Placeholders, "prompt"},
		{"turns", Placeholders, "turn"},
		{"fiel", Placeholders, "file"},
		// Too far to be a slip of anything.
		{"x", agentKeys, ""},
		{"completely-different", agentKeys, ""},
		{"aider", PresetNames, ""},
		{"rnd", Placeholders, ""},
		{"budget", topKeys, ""},
		{"", agentKeys, ""},
		{"model", nil, ""},
		{strings.Repeat("model", 20), agentKeys, ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.in, tt.candidates); got != tt.want {
			t.Errorf("suggest(%q, %v) = %q, want %q", tt.in, tt.candidates, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"a", "", 1},
		{"", "abc", 3},
		{"model", "model", 0},
		{"modle", "model", 1}, // a swap is one edit (plain Levenshtein says 2)
		{"modle", "mode", 1},
		{"ab", "ba", 1},
		{"abcdef", "abdcef", 1},
		{"tiemout", "timeout", 1},
		{"kitten", "sitting", 3},
		{"flaw", "lawn", 2},
		{"ca", "abc", 3},  // optimal string alignment edits no letter twice (unrestricted Damerau says 2)
		{"日本語", "日語本", 1}, // letters, not bytes
		{strings.Repeat("a", maxEditRunes+1), "a", maxEditRunes * 2},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.b, tt.a, got, tt.want)
		}
	}
}

// FuzzEditDistance holds the library's distance to its definition, which
// the ranking relies on: zero only for equal strings, symmetric, at least
// the difference in length, never more than Levenshtein's (which lacks the
// swap), and one for a swap.
func FuzzEditDistance(f *testing.F) {
	for _, s := range [][2]string{{"modle", "model"}, {"ca", "abc"}, {"", "x"}, {"kitten", "sitting"}, {"日本語", "日語本"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		ra, rb := []rune(a), []rune(b)
		if len(ra) > maxEditRunes || len(rb) > maxEditRunes {
			return
		}
		d := editDistance(a, b)
		if (d == 0) != (a == b) {
			t.Fatalf("editDistance(%q, %q) = %d", a, b, d)
		}
		if back := editDistance(b, a); back != d {
			t.Fatalf("not symmetric: %d one way, %d the other", d, back)
		}
		if lev := edlib.LevenshteinDistance(a, b); d > lev || d < abs(len(ra)-len(rb)) {
			t.Fatalf("editDistance(%q, %q) = %d, Levenshtein %d", a, b, d, lev)
		}
		if len(ra) >= 2 && ra[0] != ra[1] {
			swapped := append([]rune{ra[1], ra[0]}, ra[2:]...)
			if got := editDistance(a, string(swapped)); got != 1 {
				t.Fatalf("a swap of %q is %d edits", a, got)
			}
		}
	})
}
