package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./config -run %s -update)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the rendered prompt (go test ./config -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestDefaultTurnPromptGolden(t *testing.T) {
	c := Default()
	got, err := c.RenderPrompt("turn", PromptData{
		Agent: "codex", File: "/srv/debates/api-shape.walkie.md", Turn: 14, Round: 7, MaxRounds: 8,
		Participants: []string{"claude", "codex"}, MaxTurnBytes: 8000,
		OwnTurn: 12, NewFrom: 702, NewFirstTurn: 13, NewLastTurn: 13,
		Pieces: []PromptPiece{{From: 1, To: 401, What: "the briefing and turns 1-8"}, {From: 402, What: "turns 9-13"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "turn-prompt.golden", got)
}

func TestDefaultTurnPromptMinimal(t *testing.T) {
	// Fields left empty drop their clauses rather than print zeros.
	got, err := Default().RenderPrompt("", PromptData{Agent: "a", File: "d.walkie.md", Turn: 1, Round: 1})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "turn-prompt-minimal.golden", got)
}

func TestDefaultTurnPromptSays(t *testing.T) {
	got, err := Default().RenderPrompt("turn", PromptData{
		Agent: "gemini", File: "x.walkie.md", Turn: 9, Round: 3, MaxRounds: 3,
		Participants: []string{"claude", "codex", "gemini"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"You are gemini",
		"between claude, codex and gemini",
		"x.walkie.md",
		"\n## Turn 9 \u00b7 gemini\n",
		"round 3 of at most 3",
		"Read all of it, every line",
		"briefing",
		"the turns follow in order",
		"all of it is new to you",
		"Append exactly one turn at the very end",
		"Never edit",
		"\nSigned-off-by: gemini\n",
		"voids every earlier sign-off",
		"Keep your turn short",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %q:\n%s", want, got)
		}
	}
}

func TestRenderPrompt(t *testing.T) {
	src := `
prompts:
  terse: "{{.Agent}} writes {{.Heading}} in {{.File}}; {{join .Participants \"+\"}}; {{.SignRule}}"
agents:
  fake:
    command: [fake]
    prompt: terse
`
	c, err := Parse("w.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Agent("fake")
	got, err := c.RenderPrompt(a.Prompt, PromptData{Agent: "fake", File: "f", Turn: 2, Participants: []string{"a", "b"}, SignRule: "sign if happy"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "fake writes ## Turn 2 · fake in f; a+b; sign if happy"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got, _ = c.RenderPrompt("terse", PromptData{Agent: "fake", Heading: "## Custom", File: "f"})
	if !strings.Contains(got, "## Custom") {
		t.Errorf("explicit Heading not used: %q", got)
	}
	// The built-in templates stay beside the user's.
	if _, err := c.RenderPrompt("turn", PromptData{Agent: "a"}); err != nil {
		t.Error(err)
	}
	_, err = c.RenderPrompt("nope", PromptData{})
	if err == nil || !strings.Contains(err.Error(), `no prompt template "nope"; known: review, terse, turn`) {
		t.Errorf("err %v", err)
	}
}

func TestSignRuleOverride(t *testing.T) {
	got, err := Default().RenderPrompt("turn", PromptData{Agent: "a", Turn: 1, Round: 1, SignRule: "CUSTOM SIGN RULE."})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "5. CUSTOM SIGN RULE.") || strings.Contains(got, "Signed-off-by: a") {
		t.Errorf("SignRule not used:\n%s", got)
	}
}

func TestHeading(t *testing.T) {
	if got := Heading(12, "codex"); got != "## Turn 12 \u00b7 codex" {
		t.Errorf("Heading = %q", got)
	}
}

func TestListWords(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a and b"}, {[]string{"a", "b", "c"}, "a, b and c"}} {
		if got := listWords(tt.in); got != tt.want {
			t.Errorf("listWords(%q) = %q", tt.in, got)
		}
	}
}

// TestTurnPromptStableFirst: an agent's prompts for two of its turns
// agree from the first byte to the end of what does not change (the
// rules), and differ only in the turn's own lines after it: a provider
// caches a prompt's prefix, and any change ends what it can reuse.
func TestTurnPromptStableFirst(t *testing.T) {
	c := Default()
	at := func(turn, own int, pieces ...PromptPiece) string {
		got, err := c.RenderPrompt("turn", PromptData{Agent: "codex", File: "/d/api.walkie.md", Turn: turn, Round: (turn + 1) / 2, MaxRounds: 8,
			Participants: []string{"claude", "codex"}, MaxTurnBytes: 8000, OwnTurn: own, NewFrom: 10 * own, NewFirstTurn: own + 1, NewLastTurn: turn - 1, Pieces: pieces})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	a := at(4, 2, PromptPiece{From: 1, What: "the briefing and turns 1-3"})
	b := at(12, 10, PromptPiece{From: 1, To: 300, What: "the briefing and turns 1-8"}, PromptPiece{From: 301, What: "turns 9-11"})
	common := 0
	for common < len(a) && common < len(b) && a[common] == b[common] {
		common++
	}
	stable := strings.Index(a, "This turn: ")
	if stable < 0 || common < stable {
		t.Fatalf("the prompts of turns 4 and 12 part at byte %d, before the turn's own lines at %d:\n%s", common, stable, a[:common])
	}
	for _, p := range []string{a, b} {
		if i := strings.Index(p, "turn 4"); i >= 0 && i < stable || strings.Index(p, "turn 12") >= 0 && strings.Index(p, "turn 12") < stable {
			t.Fatalf("the turn number comes before the stable part ends:\n%s", p)
		}
	}
}
