package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

func TestDisplay(t *testing.T) {
	var buf bytes.Buffer
	d := newDisplay(&buf)
	start := time.Now()
	d.observe(controller.Event{Kind: controller.EventTurnStarted, Turn: 3, Round: 2, Agent: "codex", Attempt: 1, Started: start})
	d.observe(controller.Event{Kind: controller.EventOutput, Turn: 3, Agent: "codex", Line: "Reading\tthe file"})
	d.observe(controller.Event{Kind: controller.EventOutput, Turn: 3, Agent: "codex", Line: strings.Repeat("x", 500)})
	d.observe(controller.Event{Kind: controller.EventTurnRecorded, Turn: 3, Agent: "codex",
		Record: &controller.TurnRecord{Turn: 3, Agent: "codex", Outcome: walkie.OutcomeAccepted, DurationMS: 1500, Signed: true, Detail: "turn recorded"}})
	d.observe(controller.Event{Kind: controller.EventTurnStarted, Agent: "gemini", Attempt: 1, Started: start, Line: "research phase"})
	d.observe(controller.Event{Kind: controller.EventTurnRecorded, Agent: "gemini",
		Record: &controller.TurnRecord{Agent: "gemini", Role: "research", Outcome: walkie.OutcomeAccepted, DurationMS: 2000, Detail: "file written"}})
	d.observe(controller.Event{Kind: controller.EventDebateEnded, Status: "converged"})
	d.observe(controller.Event{Kind: controller.EventDebateEnded, Status: "max-rounds", Line: "reached the cap of 6 rounds"})
	d.stop()
	out := buf.String()
	for _, want := range []string{"▶ turn 3 · codex (round 2, attempt 1)", "Reading the file", "turn 3   codex", "accepted", "1.5s  signed  turn recorded", "▶ research phase · gemini (attempt 1)", "  research gemini     accepted          2.0s  file written", "  converged\n",
		"  stopped: max-rounds (reached the cap of 6 rounds)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the display lacks %q:\n%q", want, out)
		}
	}
	if strings.Contains(out, "debate max-rounds") {
		t.Errorf("the end line reads %q", out)
	}
	for _, line := range strings.Split(out, "\r") {
		if n := len([]rune(strings.TrimPrefix(line, "\x1b[K"))); n > d.width {
			t.Errorf("a status line of %d columns on a %d-column terminal", n, d.width)
		}
	}
}
