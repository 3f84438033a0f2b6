package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// telegram is a local stand-in for the Bot API's sendMessage.
type telegram struct {
	srv  *httptest.Server
	mu   sync.Mutex
	msgs []string
}

func newTelegram(t *testing.T, token string) *telegram {
	tg := &telegram{}
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bot"+token+"/sendMessage" {
			http.Error(w, `{"ok":false,"description":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var m struct {
			ChatID string `json:"chat_id"`
			Text   string `json:"text"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || m.ChatID != "42" {
			http.Error(w, `{"ok":false}`, http.StatusBadRequest)
			return
		}
		tg.mu.Lock()
		tg.msgs = append(tg.msgs, m.Text)
		tg.mu.Unlock()
		fmt.Fprint(w, `{"ok":true,"result":{}}`)
	}))
	t.Cleanup(tg.srv.Close)
	return tg
}

func (tg *telegram) messages() []string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.msgs)
}

// notifyConfig is the notify: section: a command sink that appends each
// event's JSON to events.jsonl, and Telegram at the stand-in.
func notifyConfig(tg *telegram, command string) string {
	return fmt.Sprintf("notify:\n  command: [sh, -c, %q]\n  telegram: {chat_id: \"42\", token_env: WALKIE_E2E_TG, api_url: %q}\n", command, tg.srv.URL)
}

// walkie auto notifies through the same sinks as serve and watch (issue
// 13: it sent nothing): every event once, and the supervisor's copy of
// each turn, on by default for a new debate; all delivered before it
// exits.
func TestAutoNotifies(t *testing.T) {
	t.Setenv("WALKIE_E2E_TG", "t0k")
	tg := newTelegram(t, "t0k")
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
	msgs := tg.messages()
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
	tg := newTelegram(t, "t0k")
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1, top: notifyConfig(tg, "cat >> events.jsonl"),
		scripts: map[string]string{"a": "sign: true", "b": "sign: true"}})
	d.auto(0, "--no-notify")
	if b, err := readFileErr(d.path("events.jsonl")); err == nil || len(tg.messages()) > 0 {
		t.Errorf("--no-notify sent %q and %d messages", b, len(tg.messages()))
	}

	slow := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1, top: notifyConfig(tg, "sleep 5"),
		scripts: map[string]string{"a": "sign: true", "b": "sign: true"}})
	began := time.Now()
	r := slow.auto(0, "--notify-timeout", "500ms")
	if took := time.Since(began); took > 4*time.Second {
		t.Errorf("exit took %s with a 500ms notify timeout", took)
	}
	if !strings.Contains(r.stderr, "notifications not delivered before the deadline: command ") || !strings.Contains(r.stderr, "raise --notify-timeout") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	slow.noProcessesLeft()
}

func readFileErr(path string) ([]byte, error) { return os.ReadFile(path) }
