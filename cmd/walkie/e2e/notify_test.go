package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
)

// notifyConfig is the notify: section: a command sink that appends each
// event's JSON to events.jsonl, and Telegram at the stand-in.
func notifyConfig(tg *blackbox.Telegram, command string) string {
	return fmt.Sprintf("notify:\n  command: [sh, -c, %q]\n  telegram: {chat_id: \"42\", token_env: WALKIE_E2E_TG, api_url: %q}\n", command, tg.URL)
}

// walkie auto notifies through the same sinks as serve and watch (issue
// 13: it sent nothing): every event once, and the supervisor's copy of
// each turn, on by default for a new debate; all delivered before it
// exits.
func TestAutoNotifies(t *testing.T) {
	t.Setenv("WALKIE_E2E_TG", "t0k")
	tg := blackbox.StartTelegram(t, "t0k", "42")
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1, top: notifyConfig(tg, "cat >> events.jsonl"),
		scripts: map[string]string{"a": "sign: true", "b": "sign: true"}})
	d.auto(0)
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(string(d.read("events.jsonl"))), "\n") {
		var e struct {
			Kind string `json:"kind"`
			Turn int    `json:"turn"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		kinds = append(kinds, fmt.Sprintf("%s %d", e.Kind, e.Turn))
	}
	slices.Sort(kinds)
	want := []string{"debate-ended 0", "entry 1", "entry 2", "turn-recorded 1", "turn-recorded 2", "turn-started 1", "turn-started 2"}
	if !slices.Equal(kinds, want) {
		t.Errorf("command sink got %q, want each once: %q", kinds, want)
	}
	msgs := tg.Messages()
	if len(msgs) != len(want) || !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, "d: debate ended converged") }) ||
		!slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, "d · Turn 2 · b") }) {
		t.Errorf("telegram got %d messages, want %d:\n%s", len(msgs), len(want), strings.Join(msgs, "\n--\n"))
	}
	d.noProcessesLeft()
}

// --no-notify silences one run; a sink slower than --notify-timeout is
// reported at exit, and does not hold the exit.
func TestAutoNotifyControls(t *testing.T) {
	t.Setenv("WALKIE_E2E_TG", "t0k")
	tg := blackbox.StartTelegram(t, "t0k", "42")
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1, top: notifyConfig(tg, "cat >> events.jsonl"),
		scripts: map[string]string{"a": "sign: true", "b": "sign: true"}})
	d.auto(0, "--no-notify")
	if b, err := readFileErr(d.path("events.jsonl")); err == nil || len(tg.Messages()) > 0 {
		t.Errorf("--no-notify sent %q and %d messages", b, len(tg.Messages()))
	}

	slow := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1, top: notifyConfig(tg, "sleep 5"),
		scripts: map[string]string{"a": "sign: true", "b": "sign: true"}})
	began := time.Now()
	r := slow.auto(0, "--notify-timeout", "500ms")
	if took := time.Since(began); took > 4*time.Second {
		t.Errorf("exit took %s with a 500ms notify timeout", took)
	}
	if !strings.Contains(r.Stderr, "notifications not delivered before the deadline: command ") || !strings.Contains(r.Stderr, "raise --notify-timeout") {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
	slow.noProcessesLeft()
}

func readFileErr(path string) ([]byte, error) { return os.ReadFile(path) }
