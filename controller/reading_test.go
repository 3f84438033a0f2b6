package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// The turn prompt tells each agent how to read the record, planned from
// the record before its turn: the pieces by line, its own last turn and
// where the new part starts. And an agent whose CLI reports no tokens
// has the bytes it was given logged instead.
func TestTurnPromptReading(t *testing.T) {
	// The prompts are kept in a folder of the test's, which the agents'
	// sandboxes let them write.
	kept := t.TempDir()
	keep := `printf "%s" "$4" > "$5/prompt-$1.txt"`
	cmd := `[sh, -c, 'printf "\n## Turn %s · %s\nA turn.\n" "$1" "$2" >> "$3"; ` + keep + `', sh, "{turn}", "{agent}", "{file}", "{prompt}", ` + fmt.Sprintf("%q", kept) + `]` +
		fmt.Sprintf("\n    sandbox_write: [%q]", kept)
	file, cfg := testDebate(t, 2, map[string]string{"a": cmd, "b": cmd}, "a", "b")
	if _, err := Run(context.Background(), Options{File: file, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	prompt := string(readFile(t, filepath.Join(kept, "prompt-3.txt")))
	for _, want := range []string{
		"Your own last turn, turn 1, answered everything before it.",
		fmt.Sprintf("New since then: turn 2, from line %d.", d.Entries[0].MarkLine+1),
		"\n1. lines 1-end: the briefing and turns 1-2",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("turn 3's prompt lacks %q:\n%s", want, prompt)
		}
	}
	if first := string(readFile(t, filepath.Join(kept, "prompt-1.txt"))); !strings.Contains(first, "all of it is new to you") {
		t.Errorf("turn 1's prompt:\n%s", first)
	}
	recs := turnLog(t, file)
	before := d.Entries[1].Offset + int64(len(d.Entries[1].Raw)) // the record as turn 3 found it
	if r := recs[2]; r.Usage != nil || r.PromptBytes != len(prompt) || r.SentBytes != int64(len(prompt))+before {
		t.Errorf("turn 3 logged usage %+v, prompt %d bytes, sent %d; want %d and %d", r.Usage, r.PromptBytes, r.SentBytes, len(prompt), int64(len(prompt))+before)
	}
}
