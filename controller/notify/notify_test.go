package notify

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fast retries, so a receiver that fails at first costs milliseconds.
func fast(o Options) Options {
	o.Backoff, o.MaxBackoff = 5*time.Millisecond, 20*time.Millisecond
	return o
}

func closeNow(t *testing.T, n *Notifier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Error(err)
	}
}

// A person's turn, as the sinks say it.
func TestWaitingSummary(t *testing.T) {
	evs := FromController(controller.Event{Kind: controller.EventWaiting, Debate: "api", Turn: 2, Agent: "alice", Line: "waiting for alice: walkie post api.walkie.md --from alice"})
	if len(evs) != 1 || evs[0].Kind != KindWaiting || evs[0].Agent != "alice" {
		t.Fatalf("%+v", evs)
	}
	if s := evs[0].Summary(); s != "api: turn 2 is alice's: waiting for alice: walkie post api.walkie.md --from alice" {
		t.Errorf("summary %q", s)
	}
}

var sample = []Event{
	{Kind: KindTurnStarted, Debate: "api", File: "/d/api.walkie.md", Turn: 3, Agent: "codex", Attempt: 1},
	{Kind: KindTurnRecorded, Debate: "api", Turn: 3, Agent: "codex", Outcome: "timeout", Detail: "no output for 5m"},
	{Kind: KindDebateEnded, Debate: "api", Status: "converged"},
	{Kind: KindEscalation, Debate: "api", Reason: "codex did not answer"},
}

// A webhook receiver that fails twice gets every event, in order, once.
func TestWebhookRetriesAReceiverThatFailsAtFirst(t *testing.T) {
	var (
		mu    sync.Mutex
		got   []Event
		calls atomic.Int32
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Token") != "t0k" {
			http.Error(w, "bad headers", http.StatusBadRequest)
			return
		}
		var e Event
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
	}))
	defer srv.Close()
	var results sync.Map
	o := fast(Options{Count: func(sink, result string) {
		v, _ := results.LoadOrStore(sink+" "+result, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
	}})
	n, err := New(config.Notify{Webhook: config.Webhook{URL: srv.URL, Headers: map[string]string{"X-Token": "t0k"}}}, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sample {
		n.Notify(e)
	}
	closeNow(t, n)
	if len(got) != len(sample) {
		t.Fatalf("received %d events, want %d: %+v", len(got), len(sample), got)
	}
	for i := range sample {
		if got[i].Kind != sample[i].Kind || got[i].At.IsZero() {
			t.Errorf("event %d: %+v, want kind %s with a time", i, got[i], sample[i].Kind)
		}
	}
	if v, _ := results.Load("webhook retried"); v == nil || v.(*atomic.Int32).Load() != 2 {
		t.Errorf("want 2 retries counted")
	}
}

// A 4xx other than 408/429 is not retried: the request itself is wrong.
func TestWebhookClientErrorIsNotRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "no such hook", http.StatusNotFound)
	}))
	defer srv.Close()
	core, logs := observer.New(zap.InfoLevel)
	n, _ := New(config.Notify{Webhook: config.Webhook{URL: srv.URL}}, fast(Options{Log: zap.New(core)}))
	n.Notify(sample[0])
	closeNow(t, n)
	if calls.Load() != 1 {
		t.Errorf("%d calls, want 1", calls.Load())
	}
	if logs.FilterMessage("notification failed; giving up on this event").Len() != 1 {
		t.Errorf("the failure was not logged: %v", logs.All())
	}
}

// A stand-in for the Telegram Bot API: sendMessage under /bot<TOKEN>/,
// failing at first with a 429 that says when to retry, then a 500.
func TestTelegramStandIn(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // the bot's store of messages sent
	const token = "123:ABC-secret"
	var (
		mu    sync.Mutex
		texts []string
		calls atomic.Int32
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bot"+token+"/sendMessage" || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
			return
		}
		switch calls.Add(1) {
		case 1:
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 0","parameters":{"retry_after":0}}`)
			return
		case 2:
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var m struct {
			ChatID string `json:"chat_id"`
			Text   string `json:"text"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		if m.ChatID != "-10042" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"ok":false,"description":"chat not found"}`)
			return
		}
		mu.Lock()
		texts = append(texts, m.Text)
		mu.Unlock()
		_, _ = io.WriteString(w, `{"ok":true,"result":{"message_id":1}}`)
	}))
	defer srv.Close()
	env := map[string]string{"WALKIE_TG": token}
	cfg := config.Notify{Telegram: config.Telegram{ChatID: "-10042", TokenEnv: "WALKIE_TG", APIURL: srv.URL + "/"}}
	n, err := New(cfg, fast(Options{Getenv: func(k string) string { return env[k] }}))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sample {
		n.Notify(e)
	}
	n.Notify(Event{Kind: KindEntry, Debate: "api", Turn: 4, Agent: "claude", Text: "I agree.\nSigned-off-by: claude\n"})
	closeNow(t, n)
	want := []string{
		"api: turn 3 (codex) started",
		"api: turn 3 (codex) timeout: no output for 5m",
		"api: debate ended converged",
		"api: needs the supervisor: codex did not answer",
		"api · Turn 4 · claude\n\nI agree.\nSigned-off-by: claude",
	}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("messages:\n%q\nwant\n%q", texts, want)
	}
}

func TestTelegramNeedsItsToken(t *testing.T) {
	_, err := New(config.Notify{Telegram: config.Telegram{ChatID: "1", TokenEnv: "NOPE"}}, Options{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "export NOPE") {
		t.Fatalf("err = %v; want it to name the variable", err)
	}
}

// The bot token is part of the URL; a connection error must not carry it
// into the log.
func TestTelegramErrorsDoNotLeakTheToken(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	core, logs := observer.New(zap.DebugLevel)
	n, err := New(config.Notify{Telegram: config.Telegram{ChatID: "1", APIURL: url}},
		fast(Options{Log: zap.New(core), Tries: 2, Getenv: func(string) string { return "SECRET-TOKEN" }}))
	if err != nil {
		t.Fatal(err)
	}
	n.Notify(sample[0])
	closeNow(t, n)
	if logs.Len() == 0 {
		t.Fatal("the failure was not logged")
	}
	for _, e := range logs.All() {
		for _, f := range e.Context {
			if strings.Contains(f.String+errString(f.Interface), "SECRET-TOKEN") {
				t.Fatalf("the token leaked into the log: %v", e)
			}
		}
	}
}

func errString(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	return ""
}

// The command sink gets the event JSON on stdin; a command that fails
// is retried.
func TestCommandSink(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "events.jsonl")
	marker := filepath.Join(dir, "failed-once")
	// Fails the first time, then appends stdin to the file.
	script := `if [ ! -e "$2" ]; then : > "$2"; exit 3; fi; cat >> "$1"`
	n, err := New(config.Notify{Command: []string{"sh", "-c", script, "sh", out, marker}}, fast(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	n.Notify(sample[2])
	closeNow(t, n)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var e Event
	if err := json.Unmarshal(b, &e); err != nil || e.Kind != KindDebateEnded || e.Status != "converged" {
		t.Fatalf("command got %q (%v)", b, err)
	}
}

// blockingSink holds every Send until released, like a receiver that
// hangs.
type blockingSink struct {
	release chan struct{}
	entered chan struct{} // optional: told when a Send begins
	mu      sync.Mutex
	got     []int
}

func (s *blockingSink) Name() string { return "blocking" }
func (s *blockingSink) Send(ctx context.Context, e Event) error {
	if s.entered != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	s.got = append(s.got, e.Turn)
	s.mu.Unlock()
	return nil
}

// A sink that hangs never slows Notify; its queue keeps the newest
// events and drops the oldest, with a log line each.
func TestQueueDropsOldestAndNeverBlocks(t *testing.T) {
	s := &blockingSink{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	core, logs := observer.New(zap.WarnLevel)
	n := NewWithSinks([]Sink{s}, false, Options{Log: zap.New(core), QueueSize: 3})
	began := time.Now()
	n.Notify(Event{Kind: KindTurnStarted, Turn: 1})
	<-s.entered // the sender holds event 1
	for i := 2; i <= 20; i++ {
		n.Notify(Event{Kind: KindTurnStarted, Turn: i})
	}
	if d := time.Since(began); d > 100*time.Millisecond {
		t.Errorf("20 Notify calls on a hung sink took %v", d)
	}
	close(s.release)
	closeNow(t, n)
	// The sender held the first event; of the rest, the newest three
	// were kept.
	got := s.got
	if len(got) != 4 || got[len(got)-1] != 20 || got[1] != 18 {
		t.Errorf("delivered turns %v; want the first one and the newest three", got)
	}
	if d := logs.FilterMessage("notification queue full; dropped the oldest event").Len(); d != 16 {
		t.Errorf("%d drops logged, want 16", d)
	}
}

// Close gives up on a sink that never answers when its context ends.
func TestCloseGivesUp(t *testing.T) {
	s := &blockingSink{release: make(chan struct{})}
	n := NewWithSinks([]Sink{s}, false, Options{})
	n.Notify(sample[0])
	n.Notify(sample[1])
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := n.Close(ctx)
	if d := time.Since(began); d > time.Second {
		t.Errorf("Close took %v with a 50ms deadline", d)
	}
	// Both events are lost, and Close says so, per sink.
	if err == nil || !strings.Contains(err.Error(), "not delivered before the deadline: blocking 2") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: %v", err)
	}
	n.Notify(sample[2]) // after Close: dropped, no panic
	if len(s.got) != 0 {
		t.Errorf("delivered %v to a sink that never answered", s.got)
	}
	var nilN *Notifier
	nilN.Notify(sample[0])
	if err := nilN.Close(ctx); err != nil {
		t.Error(err)
	}
	if nilN.Enabled() {
		t.Error("a nil notifier is enabled")
	}
}
