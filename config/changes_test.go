package config

import (
	"slices"
	"testing"
)

func TestChanges(t *testing.T) {
	prev, err := Parse("a.yaml", []byte("agents:\n  old: {command: [x]}\n  keep: {command: [x]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := Changes(prev, prev); got != nil {
		t.Errorf("no change: %q", got)
	}
	same, _ := Parse("elsewhere.yaml", []byte("agents:\n  old: {command: [x]}\n  keep: {command: [x]}\n"))
	if got := Changes(prev, same); got != nil {
		t.Errorf("only the path differs: %q", got)
	}
	next, err := Parse("a.yaml", []byte(`
defaults: {stall: 1m}
agents:
  keep: {command: [x]}
  new: {command: [y]}
  codex: {timeout: 1h}
prompts: {mine: "{{.Agent}}"}
limits: {max_sessions: 1}
budget_usd: 3
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"defaults changed",
		"agent claude changed", // the new stall default reaches every agent
		"agent codex changed",
		"agent gemini changed",
		"agent keep changed",
		"agent new added",
		"agent old removed",
		"prompt mine added",
		"limits changed",
		"budget_usd 0 → 3",
	}
	if got := Changes(prev, next); !slices.Equal(got, want) {
		t.Errorf("Changes:\n got %q\nwant %q", got, want)
	}
}
