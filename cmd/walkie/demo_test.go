package main

import (
	"os"
	"testing"

	"github.com/walkie-sh/walkie/briefing"
)

// make demo shows walkie at its best, so its briefing must pass walkie's
// own check: every section, and a length within the aim, not merely near
// it.
func TestDemoBriefingPassesTheCheck(t *testing.T) {
	text, err := os.ReadFile("../../scripts/demo/briefing.md")
	if err != nil {
		t.Fatal(err)
	}
	rep := briefing.Check(text)
	if !rep.OK() || rep.Words < briefing.MinWords || rep.Words > briefing.MaxWords {
		t.Errorf("the demo briefing: %d words (aim %d-%d), problems: %v", rep.Words, briefing.MinWords, briefing.MaxWords, rep.Problems())
	}
}
