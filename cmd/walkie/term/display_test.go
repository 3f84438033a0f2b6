package term

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

func TestDisplay(t *testing.T) {
	var buf bytes.Buffer
	d := NewDisplay(&buf, Palette{})
	start := time.Now()
	d.Observe(controller.Event{Kind: controller.EventTurnStarted, Turn: 3, Round: 2, Agent: "codex", Attempt: 1, Started: start})
	d.Observe(controller.Event{Kind: controller.EventOutput, Turn: 3, Agent: "codex", Line: "reading\tapi.go"})
	d.Observe(controller.Event{Kind: controller.EventOutput, Turn: 3, Agent: "codex", Line: strings.Repeat("界", 500)})
	d.Observe(controller.Event{Kind: controller.EventTurnRecorded, Turn: 3, Agent: "codex",
		Record: &controller.TurnRecord{Turn: 3, Agent: "codex", Outcome: walkie.OutcomeAccepted, DurationMS: 1500, Signed: true, Detail: "turn recorded",
			Usage: &controller.Usage{CostUSD: 0.0042, CostSource: "reported"}}})
	d.Observe(controller.Event{Kind: controller.EventTurnStarted, Agent: "gemini", Attempt: 1, Started: start, Line: "research phase"})
	d.Observe(controller.Event{Kind: controller.EventTurnRecorded, Agent: "gemini",
		Record: &controller.TurnRecord{Agent: "gemini", Role: "research", Outcome: walkie.OutcomeAccepted, DurationMS: 2000, Detail: "file written"}})
	d.Observe(controller.Event{Kind: controller.EventDebateEnded, Status: "converged"})
	d.Observe(controller.Event{Kind: controller.EventDebateEnded, Status: "max-rounds", Line: "reached its round cap of 6"})
	d.Stop()
	out := buf.String()
	for _, want := range []string{"▶ turn 3 · codex (round 2, attempt 1)", "reading api.go",
		"✓ turn 3 · codex accepted in 1.5s · signed · $0.0042 · turn recorded\n", "▶ research phase · gemini (attempt 1)",
		"✓ research · gemini accepted in 2s · file written\n", "debate converged\n", "stopped: max-rounds (reached its round cap of 6)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the display lacks %q:\n%q", want, out)
		}
	}
	if strings.Contains(out, "\x1b[3") {
		t.Errorf("colour without a palette:\n%q", out)
	}
	if strings.Contains(out, "debate max-rounds") {
		t.Errorf("the end line reads %q", out)
	}
	// Every line drawn fits the terminal: wide characters count twice.
	for _, line := range strings.FieldsFunc(ansi.Strip(out), func(r rune) bool { return r == '\r' || r == '\n' }) {
		if n := ansi.StringWidth(line); n > d.width {
			t.Errorf("a status line of %d columns on a %d-column terminal", n, d.width)
		}
	}
}

// A round table's reviewers run side by side: one live line each, each
// redrawn in place, and a line that stays for each as it is recorded.
func TestDisplayParallelReviewers(t *testing.T) {
	var buf bytes.Buffer
	d := quietDisplay(&buf, Palette{})
	start := time.Now()
	for i, name := range []string{"codex", "gemini"} {
		d.Observe(controller.Event{Kind: controller.EventTurnStarted, Turn: 2 + i, Round: 1, Agent: name, Attempt: 1, Started: start})
	}
	d.Observe(controller.Event{Kind: controller.EventOutput, Agent: "gemini", Line: "reading main.go"})
	if d.drawn != 2 {
		t.Fatalf("%d live lines, want 2", d.drawn)
	}
	buf.Reset()
	d.Observe(controller.Event{Kind: controller.EventOutput, Agent: "codex", Line: "running go test"})
	// Redrawn in place: both lines erased, the last first, both drawn again.
	if got := buf.String(); !strings.HasPrefix(got, "\r\x1b[2K\x1b[1A\r\x1b[2K") || strings.Count(got, "▶") != 2 ||
		!strings.Contains(got, "codex (round 1, attempt 1) 0s  running go test\n") || !strings.Contains(got, "gemini (round 1, attempt 1) 0s  reading main.go") {
		t.Errorf("redraw:\n%q", got)
	}
	buf.Reset()
	d.Observe(controller.Event{Kind: controller.EventTurnRecorded, Agent: "codex",
		Record: &controller.TurnRecord{Turn: 2, Agent: "codex", Outcome: walkie.OutcomeTimeout, DurationMS: 61000, Detail: "no turn within 1m"}})
	if got := buf.String(); !strings.HasPrefix(got, "\r\x1b[2K\x1b[1A\r\x1b[2K✗ turn 2 · codex timeout in 1m01s · no turn within 1m\n") || strings.Count(got, "▶") != 1 || d.drawn != 1 {
		t.Errorf("after codex's record:\n%q", got)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 900 * time.Millisecond: "0.9s", 1500 * time.Millisecond: "1.5s", 12 * time.Second: "12s",
		59960 * time.Millisecond: "1m00s", 61 * time.Second: "1m01s", 3599 * time.Second: "59m59s",
		time.Hour + 2*time.Minute + 10*time.Second: "1h02m", -time.Second: "0s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("%v: got %q, want %q", d, got, want)
		}
	}
}

// What an agent, a CLI or a person wrote reaches the live display and
// the progress lines as visible text: an OSC 52 clipboard write in an
// agent's output, a note, a wait, a detail or the reason a run ended
// never reaches the terminal as the sequence it is.
func TestLinesCleanOutsideText(t *testing.T) {
	const osc = "\x1b]52;c;ZWNobw==\x07"
	events := []controller.Event{
		{Kind: controller.EventTurnStarted, Turn: 1, Round: 1, Agent: "ada" + osc, Attempt: 1, Started: time.Now()},
		{Kind: controller.EventOutput, Agent: "ada" + osc, Line: "reading " + osc},
		{Kind: controller.EventNote, Line: "priced " + osc},
		{Kind: controller.EventTurnRecorded, Agent: "ada" + osc, Record: &controller.TurnRecord{Turn: 1, Agent: "ada" + osc, Outcome: walkie.OutcomeCrashed, Detail: "exit 1: " + osc}},
		{Kind: controller.EventWaiting, Line: "waiting for brook" + osc},
		{Kind: controller.EventDebateEnded, Status: walkie.StatusHalted, Line: "naming" + osc},
	}
	var live, lines bytes.Buffer
	d := quietDisplay(&live, Palette{})
	p := NewProgress(&lines, Palette{})
	for _, e := range events {
		d.Observe(e)
		p.Observe(e)
	}
	d.Stop()
	for name, out := range map[string]string{"display": live.String(), "progress": lines.String()} {
		if strings.Contains(out, "\x1b]") || strings.Contains(out, "\x07") || !strings.Contains(out, "^[]52;c;ZWNobw==^G") {
			t.Errorf("the %s:\n%q", name, out)
		}
	}
	if strings.Contains(lines.String(), "\x1b") {
		t.Errorf("an escape in the progress lines:\n%q", lines.String())
	}
}
