package telegram

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
)

func TestBadText(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"Cursors.\nSigned-off-by: alice", ""},
		{"tabs\tand\nnewlines", ""},
		{strings.Repeat("x", MaxText), ""},
		{strings.Repeat("x", MaxText+1), "the message is 65537 bytes"},
		{"ding\adong", "control character (U+0007) at byte 4"},
		{"nul\x00", "control character (U+0000) at byte 3"},
		{"carriage\rreturn", "control character (U+000D)"},
		{"\u0085next line", "control character (U+0085) at byte 0"},
		{"bad \xff utf-8", "not UTF-8"},
		{"  \n ", "empty"},
	} {
		got := badText(c.text)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("badText(%.20q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestCommand(t *testing.T) {
	for _, c := range []struct{ text, cmd, args string }{
		{"/status", "status", ""},
		{"/extend 2", "extend", "2"},
		{"/halt@walkie_bot going in circles ", "halt", "going in circles"},
		{"/NOTE Keep it short.", "note", "Keep it short."},
	} {
		cmd, args, ok := command(c.text)
		if !ok || cmd != c.cmd || args != c.args {
			t.Errorf("command(%q) = %q %q %v", c.text, cmd, args, ok)
		}
	}
	if _, _, ok := command("Cursors."); ok {
		t.Error("a plain message read as a command")
	}
}

func FuzzCommand(f *testing.F) {
	f.Add("/halt@bot reason")
	f.Add("/")
	f.Fuzz(func(t *testing.T, text string) {
		cmd, args, ok := command(text)
		if ok != strings.HasPrefix(text, "/") || strings.ContainsAny(cmd, " @") || strings.TrimSpace(args) != args {
			t.Fatalf("command(%q) = %q %q %v", text, cmd, args, ok)
		}
	})
}

// fakeAPI answers sendMessage and keeps what it was sent; getUpdates
// answers nothing.
type fakeAPI struct {
	mu   sync.Mutex
	sent []map[string]any
}

func (f *fakeAPI) start(t *testing.T) *Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		_ = json.NewDecoder(r.Body).Decode(&p)
		if strings.HasSuffix(r.URL.Path, "/sendMessage") {
			f.mu.Lock()
			f.sent = append(f.sent, p)
			f.mu.Unlock()
			_, _ = w.Write([]byte(`{"ok":true,"result":{"message_id":7,"chat":{"id":1}}}`))
			return
		}
		_, _ = w.Write([]byte(`{"ok":true,"result":[]}`))
	}))
	t.Cleanup(srv.Close)
	return NewClient(srv.URL, "tok", nil)
}

// A process killed while it handled an update leaves it in hand: the
// next poll does not do it again (it may have taken), tells the person to
// look, and goes on after it.
func TestPendingUpdateIsNeitherRepeatedNorLost(t *testing.T) {
	var api fakeAPI
	b, store := aliceBot(t, &api)
	if err := store.WritePoll(Poll{Offset: 41, Pending: &Pending{UpdateID: 41, Chat: "111", Message: 9}}); err != nil {
		t.Fatal(err)
	}
	p, _ := store.ReadPoll()
	p, err := b.settlePending(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if p.Offset != 42 || p.Pending != nil {
		t.Errorf("after settling: %+v", p)
	}
	if on, _ := store.ReadPoll(); on.Offset != 42 || on.Pending != nil {
		t.Errorf("on disk: %+v", on)
	}
	if len(api.sent) != 1 || api.sent[0]["chat_id"] != "111" || !strings.Contains(api.sent[0]["text"].(string), "may or may not have taken") {
		t.Errorf("the person was told: %v", api.sent)
	}
}

// The messages sent are remembered, the newest kept, for replies.
func TestStoreRemembers(t *testing.T) {
	defer func(n int) { keepSent = n }(keepSent)
	keepSent = 10
	s := OpenStore(t.TempDir())
	for i := range keepSent + 5 {
		if err := s.Remember(Sent{Chat: "1", MessageID: int64(i), File: "f"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := s.Find("1", 2); ok {
		t.Error("an old message is still remembered")
	}
	if m, ok, err := s.Find("1", int64(keepSent+4)); !ok || err != nil || m.File != "f" {
		t.Errorf("the newest: %+v %v %v", m, ok, err)
	}
	if _, ok, _ := s.Find("2", int64(keepSent+4)); ok {
		t.Error("a message of another chat was found")
	}
}

// aliceBot is a bot for alice (chat 111) against api, with its store.
func aliceBot(t *testing.T, api *fakeAPI) (*Bot, *Store) {
	t.Helper()
	store := OpenStore(t.TempDir())
	cfg, err := config.Parse("", []byte("people:\n  alice: {telegram: \"111\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return New(Options{Client: api.start(t), Store: store, Config: func() *config.Config { return cfg }}), store
}

// An update in hand is answered even when the poll is told to stop while
// it is handled: walkie auto stops the poll as a /halt ends its debate,
// and the /halt's answer went nowhere.
func TestAnUpdateInHandIsFinishedAfterTheStop(t *testing.T) {
	var api fakeAPI
	b, store := aliceBot(t, &api)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := b.take(ctx, Poll{Offset: 5}, Update{UpdateID: 5, Message: alices(9, "/help")})
	if err != nil {
		t.Fatal(err)
	}
	if p.Offset != 6 || p.Pending != nil {
		t.Errorf("after the update: %+v", p)
	}
	if on, _ := store.ReadPoll(); on.Offset != 6 {
		t.Errorf("on disk: %+v", on)
	}
	if len(api.sent) != 1 || !strings.Contains(api.sent[0]["text"].(string), "walkie takes, from the people") {
		t.Errorf("the answer: %v", api.sent)
	}
}

// A reply may come before its sender (a notify sink, often of another
// process) has written down the message it answers: it still finds it.
func TestAReplyFindsAMessageRememberedJustAfter(t *testing.T) {
	var api fakeAPI
	b, store := aliceBot(t, &api)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = store.Remember(Sent{Chat: "111", MessageID: 7, File: "d.walkie.md", Debate: "d"})
	}()
	file, sent, _, err := b.target(context.Background(), "111", &Message{Chat: Chat{ID: 111}, ReplyTo: &Message{MessageID: 7}}, "")
	if err != nil || file != "d.walkie.md" || sent == nil {
		t.Errorf("target = %q %+v %v", file, sent, err)
	}
}

// alices is alice's message id in her private chat with the bot.
func alices(id int64, text string) *Message {
	return &Message{MessageID: id, From: &User{ID: 111}, Chat: Chat{ID: 111, Type: "private"}, Text: text}
}

// Only the person speaks as the person: a message in a chat configured as
// theirs but written by someone else (a group's member, a channel, a bot)
// is ignored and not answered, as a stranger's is.
func TestOnlyThePersonSpeaksInTheirChat(t *testing.T) {
	for _, m := range []*Message{
		{MessageID: 1, From: &User{ID: 222}, Chat: Chat{ID: 111, Type: "group"}, Text: "/help"},
		{MessageID: 2, From: &User{ID: 222}, Chat: Chat{ID: 111, Type: "private"}, Text: "/help"},
		{MessageID: 3, Chat: Chat{ID: 111, Type: "channel"}, Text: "/help"},
		{MessageID: 4, From: &User{ID: 111, IsBot: true}, Chat: Chat{ID: 111, Type: "private"}, Text: "/help"},
		{MessageID: 5, From: &User{ID: 111}, Chat: Chat{ID: 111, Type: "supergroup"}, Text: "/help"},
	} {
		var api fakeAPI
		b, _ := aliceBot(t, &api)
		b.handle(context.Background(), Update{UpdateID: 1, Message: m})
		if len(api.sent) != 0 {
			t.Errorf("message %d (from %+v in %+v) was answered: %v", m.MessageID, m.From, m.Chat, api.sent)
		}
	}
	var api fakeAPI
	b, _ := aliceBot(t, &api)
	b.handle(context.Background(), Update{UpdateID: 1, Message: alices(6, "/help")})
	if len(api.sent) != 1 {
		t.Errorf("alice's own /help: %v", api.sent)
	}
}
