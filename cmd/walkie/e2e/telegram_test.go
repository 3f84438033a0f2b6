package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

const (
	aliceChat = "111" // a person who plays a participant
	frankChat = "222" // the supervisor, and the config's chat
	strangers = "999" // no person's
)

// telegramDebate is a config whose people talk to a stand-in bot:
// alice, who takes turns, and frank, who supervises; the stand-in is
// started for the two of them only.
func telegramDebate(t *testing.T, scripts map[string]string) (*debate, *blackbox.Telegram) {
	t.Helper()
	tg := blackbox.StartTelegram(t, "t0k", aliceChat, frankChat)
	top := fmt.Sprintf("people:\n  alice: {telegram: %q}\n  frank: {telegram: %q}\nnotify:\n  copy_supervisor: false\n  telegram: {chat_id: %q, token_env: WALKIE_E2E_TG, api_url: %q}\n",
		aliceChat, frankChat, frankChat, tg.URL)
	d := newDebate(t, setup{participants: []string{"alice", "fa"}, people: []string{"alice"}, maxRounds: 3, top: top, scripts: scripts})
	d.Env = append(d.Env, "WALKIE_E2E_TG=t0k", "XDG_STATE_HOME="+t.TempDir())
	return d, tg
}

// waitSent waits for a message to chat that holds text, after the first
// `after` messages, and returns it.
func waitSent(t *testing.T, tg *blackbox.Telegram, chat, text string, after int) blackbox.TelegramSent {
	t.Helper()
	var got blackbox.TelegramSent
	sessiontest.WaitFor(t, 60*time.Second, fmt.Sprintf("a message to %s saying %q", chat, text), func() bool {
		sent := tg.Sent()
		for _, m := range sent[min(after, len(sent)):] {
			if m.Chat == chat && strings.Contains(m.Text, text) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// answer waits for walkie's answer in chat to the update's message.
func answer(t *testing.T, tg *blackbox.Telegram, chat string, update int64) string {
	t.Helper()
	return waitSentReply(t, tg, chat, 100000+update).Text
}

func waitSentReply(t *testing.T, tg *blackbox.Telegram, chat string, to int64) blackbox.TelegramSent {
	t.Helper()
	var got blackbox.TelegramSent
	sessiontest.WaitFor(t, 60*time.Second, fmt.Sprintf("walkie's answer to message %d in %s", to, chat), func() bool {
		for _, m := range tg.Sent() {
			if m.Chat == chat && m.ReplyTo == to {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// Telegram both ways under walkie serve, against a stand-in that checks
// every call: a reply to alice's turn message is her turn, through the
// enforced writer and the chain; a stranger's chat is ignored and logged
// once; an edit, a 10 MB message and a control byte are refused with the
// reason; the supervisor's /status, /extend, /note, /halt and /resume act
// (alice's are refused: frank supervises); a briefing sent for approval
// is pinned by /approve; and after a restart the poll goes on from its
// offset, an update given again is not acted on twice.
func TestTelegramBothWaysUnderServe(t *testing.T) {
	d, tg := telegramDebate(t, map[string]string{"fa": "sign_from: 2"})
	if err := os.MkdirAll(d.path("served"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.MustRun(0, "init", "served/t.walkie.md", "--agents", "alice,fa", "--people", "alice", "--supervisor", "frank", "--max-rounds", "3", "--briefing", "briefing.md")
	d.MustRun(0, "brief", "approve", "served/t.walkie.md", "--yes")
	file := d.path("served/t.walkie.md")
	serve := d.Start("serve", "--dir", "served", "--listen", "", "--log-format", "json")
	defer func() {
		if _, done := serve.Exited(); !done {
			serve.Kill()
		}
	}()
	turn1 := waitSent(t, tg, aliceChat, "t: turn 1 is yours, alice.", 0)
	before := string(d.read("served/t.walkie.md"))

	// Not a person's: ignored, logged once, answered never.
	tg.Send(strangers, turn1.ID, "I am alice, honest.")
	tg.Send(strangers, turn1.ID, "Really.")
	// Refused, with the reason.
	edit := tg.Edit(aliceChat, turn1.ID, "An edit of an old message.")
	if got := answer(t, tg, aliceChat, edit); !strings.Contains(got, "An edit is not taken: a walkie record is append-only") {
		t.Errorf("the edit's answer: %q", got)
	}
	huge := tg.Send(aliceChat, turn1.ID, strings.Repeat("x", 10<<20))
	if got := answer(t, tg, aliceChat, huge); !strings.Contains(got, "Not taken: the message is 10485760 bytes, and walkie takes at most 65536") {
		t.Errorf("the 10 MB message's answer: %q", got)
	}
	bell := tg.Send(aliceChat, turn1.ID, "ding\adong")
	if got := answer(t, tg, aliceChat, bell); !strings.Contains(got, "control character (U+0007) at byte 4") {
		t.Errorf("the control byte's answer: %q", got)
	}
	if after := string(d.read("served/t.walkie.md")); after != before {
		t.Fatalf("the record changed:\n%s", after)
	}
	if n := strings.Count(serve.Stderr(), "a message from a chat no person of the config has"); n != 1 {
		t.Errorf("the stranger's chat was logged %d times, want once", n)
	}

	// alice's reply is her turn, signed: the same writer as walkie post.
	reply := tg.Send(aliceChat, turn1.ID, "Cursors: they survive inserts.\nSigned-off-by: alice")
	if got := answer(t, tg, aliceChat, reply); !strings.Contains(got, "Recorded turn 1 by alice (seq 1)") {
		t.Fatalf("alice's reply's answer: %q", got)
	}
	doc, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if e := doc.Entries[0]; e.Agent != "alice" || !e.Signed() || !strings.Contains(string(e.Body), "Cursors: they survive inserts.") {
		t.Errorf("turn 1 is %+v", e)
	}
	// fa answers; the debate comes back to alice, and rests: the record
	// verifies (while fa's session runs, its turn is unstamped bytes).
	turn3 := waitSent(t, tg, aliceChat, "t: turn 3 is yours, alice.", 0)
	d.MustRun(0, "verify", file)
	if !strings.Contains(turn3.Text, "Turn 2 · fa:") {
		t.Errorf("alice's turn does not show what fa said:\n%s", turn3.Text)
	}

	// The supervisor's controls are frank's.
	if got := answer(t, tg, aliceChat, tg.Send(aliceChat, turn3.ID, "/halt I am bored")); !strings.Contains(got, "Refused: t is supervised by frank") {
		t.Errorf("alice's /halt: %q", got)
	}
	news := waitSent(t, tg, frankChat, "t: turn 3 is alice's", 0)
	if got := answer(t, tg, frankChat, tg.Send(frankChat, news.ID, "/status")); !strings.Contains(got, "t: open") || !strings.Contains(got, "next: turn 3, alice") {
		t.Errorf("frank's /status: %q", got)
	}
	if got := answer(t, tg, frankChat, tg.Send(frankChat, news.ID, "/extend 2")); !strings.Contains(got, "round cap is now 5") {
		t.Errorf("frank's /extend: %q", got)
	}
	if got := answer(t, tg, frankChat, tg.Send(frankChat, news.ID, "/note Keep it to v1.")); !strings.Contains(got, "Recorded the supervisor entry (seq 3)") {
		t.Errorf("frank's /note: %q", got)
	}
	if got := answer(t, tg, frankChat, tg.Send(frankChat, news.ID, "/halt going in circles")); !strings.Contains(got, "Halted") {
		t.Errorf("frank's /halt: %q", got)
	}
	if st := d.MustRun(0, "status", file, "--json").Stdout; !strings.Contains(st, `"status": "halted"`) || !strings.Contains(st, "going in circles") {
		t.Errorf("after /halt: %s", st)
	}
	if got := answer(t, tg, frankChat, tg.Send(frankChat, news.ID, "/resume")); !strings.Contains(got, "resumed") {
		t.Errorf("frank's /resume: %q", got)
	}

	// A briefing sent for approval is pinned by /approve, as it was sent.
	d.MustRun(0, "init", "served/b.walkie.md", "--agents", "alice,fa", "--people", "alice", "--supervisor", "frank", "--briefing", "briefing.md")
	if out := d.MustRun(0, "brief", "send", "served/b.walkie.md").Stdout; !strings.Contains(out, "sent to frank's chat for approval") {
		t.Errorf("brief send: %s", out)
	}
	brief := waitSent(t, tg, frankChat, "b: the briefing, for approval (1 of 1)", 0)
	if got := answer(t, tg, aliceChat, tg.Send(aliceChat, brief.ID, "/approve")); !strings.Contains(got, "not one walkie sent to this chat") {
		t.Errorf("alice's /approve of frank's message: %q", got)
	}
	lastUpdate := tg.Send(frankChat, brief.ID, "/approve")
	if got := answer(t, tg, frankChat, lastUpdate); !strings.Contains(got, "briefing approved") {
		t.Errorf("frank's /approve: %q", got)
	}
	if out := d.MustRun(0, "brief", "show", "served/b.walkie.md").Stderr; !strings.Contains(out, "approved") || strings.Contains(out, "not approved") {
		t.Errorf("after /approve: %s", out)
	}

	// A restart: the poll goes on from the offset on disk, and an update
	// given again (acknowledged before) is not acted on twice.
	serve.Signal(syscall.SIGTERM)
	if r := serve.Wait(60 * time.Second); r.Code != 0 {
		t.Fatalf("serve: exit %d\n%s", r.Code, blackbox.Tail(r.Stderr, 5))
	}
	offsets := tg.Offsets()
	entries := len(mustLoad(t, file).Entries)
	tg.Again(reply, "message", aliceChat, turn1.ID, "Cursors: they survive inserts.\nSigned-off-by: alice")
	serve = d.Start("serve", "--dir", "served", "--listen", "", "--log-format", "json")
	sessiontest.WaitFor(t, 30*time.Second, "the restarted poll", func() bool { return len(tg.Offsets()) > len(offsets)+1 })
	// Every update up to the last was handled and answered before the
	// stop, and none came after it: the restart asks for the one after.
	if first := tg.Offsets()[len(offsets)]; first != lastUpdate+1 {
		t.Errorf("the restarted poll asked from offset %d, not %d, the one after the last update handled: an update lost or repeated", first, lastUpdate+1)
	}
	if err := serve.WaitSaid("telegram gave an update already handled; skipped", 1, 30*time.Second); err != nil {
		t.Error(err)
	}
	if n := len(mustLoad(t, file).Entries); n != entries {
		t.Errorf("the update given again was acted on: %d entries, were %d", n, entries)
	}
	// A clean stop left no update in hand: nobody is told one may be lost.
	for _, m := range tg.Sent() {
		if strings.Contains(m.Text, "stopped while it handled") {
			t.Errorf("after a clean restart %s was told: %q", m.Chat, m.Text)
		}
	}
	if v := tg.Violations(); len(v) > 0 {
		t.Errorf("calls that broke the Bot API's rules: %q", v)
	}
	d.MustRun(0, "verify", file)
}

// walkie auto polls while a person's turn is open: halt and extend from
// the phone reach the running auto, which ends halted (exit 12).
func TestTelegramReachesARunningAuto(t *testing.T) {
	d, tg := telegramDebate(t, map[string]string{"fa": "sign_from: 2"})
	auto := d.Start("auto", d.name, "--approve", "--log-format", "json")
	defer func() {
		if _, done := auto.Exited(); !done {
			auto.Kill()
		}
	}()
	waitSent(t, tg, aliceChat, "d: turn 1 is yours, alice.", 0)
	// Not named by a reply: auto's one debate.
	if got := answer(t, tg, frankChat, tg.Send(frankChat, 0, "/extend 1")); !strings.Contains(got, "round cap is now 4") {
		t.Errorf("/extend: %q", got)
	}
	if got := answer(t, tg, frankChat, tg.Send(frankChat, 0, "/halt from the phone")); !strings.Contains(got, "Halted") {
		t.Errorf("/halt: %q", got)
	}
	r := auto.Wait(60 * time.Second)
	if r.Code != 12 || !strings.Contains(r.Stdout, "from the phone") {
		t.Errorf("auto after the phone's /halt: exit %d\n%s\n%s", r.Code, r.Stdout, blackbox.Tail(r.Stderr, 5))
	}
	if v := tg.Violations(); len(v) > 0 {
		t.Errorf("calls that broke the Bot API's rules: %q", v)
	}
	if slices.ContainsFunc(tg.Sent(), func(m blackbox.TelegramSent) bool { return m.Chat == strangers }) {
		t.Error("a message went to a stranger")
	}
}

func mustLoad(t *testing.T, file string) *walkie.Doc {
	t.Helper()
	doc, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
