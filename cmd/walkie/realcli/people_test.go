//go:build linux

package realcli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
)

// The real claude and a person (issue 13: auto exited 2 at the person's
// turn): claude proposes, walkie waits on the doorbell for alice's post,
// and claude's next turn signs off on it.
func TestClaudeAndAPerson(t *testing.T) {
	t.Parallel()
	d := &debater{participants: []string{"claude", "alice"}, text: proposal}
	f := newFixture(t, d.script, setup{participants: d.participants, people: []string{"alice"}})
	release := f.slot()
	p := f.Start("auto", "d.walkie.md", "--approve", "--config", "walkie.yaml", "--log-format", "json")
	if err := p.WaitSaid("waiting for alice: walkie post "+f.file+" --from alice", 1, 2*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, blackbox.Dump(f.turns()))
	}
	f.write("alice.md", "alice agrees: problem details as proposed in turn 1.\n")
	f.MustRun(0, "post", "d.walkie.md", "--from", "alice", "--sign", "--body-file", "alice.md")
	r := p.Wait(f.Limit)
	release()
	f.noneLeft()
	if r.Code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, blackbox.Tail(r.Stderr, 30))
	}
	if strings.Count(r.Stderr, `"msg":"waiting"`) != 1 {
		t.Errorf("walkie said it waited %d times, want once:\n%s", strings.Count(r.Stderr, `"msg":"waiting"`), blackbox.Tail(r.Stderr, 30))
	}
	recs := f.turns()
	f.wantOutcomes(recs, "accepted", "accepted")
	if recs[0].Turn != 1 || recs[1].Turn != 3 || !recs[1].Signed {
		t.Errorf("claude's turns: %s", blackbox.Dump(recs))
	}
	f.MustRun(0, "verify", "d.walkie.md")
	st := f.MustRun(0, "status", "d.walkie.md", "--json")
	if !strings.Contains(st.Stdout, `"status": "converged"`) {
		t.Errorf("status:\n%s", st.Stdout)
	}
}

// Notifications from walkie auto (issue 13: only serve and watch sent
// any) reach a command sink and a Telegram stand-in: each turn's start
// and record, the supervisor's copy of each turn (on for a new debate),
// and the end, each exactly once, all delivered before walkie exits.
func TestAutoNotifications(t *testing.T) {
	t.Parallel()
	tg := blackbox.StartTelegram(t, "bot-token", "7")
	d := &debater{participants: []string{"claude", "codex"}, text: proposal}
	top := fmt.Sprintf("notify:\n  command: [sh, -c, 'cat >> events.jsonl']\n  telegram: {chat_id: \"7\", token_env: TG_TOKEN, api_url: %q}\n", tg.URL)
	f := newFixture(t, d.script, setup{participants: d.participants, top: top, env: []string{"TG_TOKEN=bot-token"}})
	f.session(exitOK, "auto", "d.walkie.md", "--approve")
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(f.read("events.jsonl")), "\n") {
		var e struct {
			Kind    string `json:"kind"`
			Turn    int    `json:"turn"`
			Agent   string `json:"agent"`
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got = append(got, fmt.Sprintf("%s %d %s %s", e.Kind, e.Turn, e.Agent, e.Outcome))
	}
	slices.Sort(got)
	want := []string{"debate-ended 0  ",
		"entry 1 claude ", "entry 2 codex ", "entry 3 claude ",
		"turn-recorded 1 claude accepted", "turn-recorded 2 codex accepted", "turn-recorded 3 claude accepted",
		"turn-started 1 claude ", "turn-started 2 codex ", "turn-started 3 claude "}
	if !slices.Equal(got, want) {
		t.Errorf("the command sink got\n  %s\nwant each once:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	msgs := tg.Messages()
	if len(msgs) != len(want) || !slices.Contains(msgs, "d: turn 2 (codex) accepted, signed off") || !slices.Contains(msgs, "d: debate ended converged") {
		t.Errorf("telegram got %d messages, want %d:\n%s", len(msgs), len(want), strings.Join(msgs, "\n--\n"))
	}
}
