package blackbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Telegram is a stand-in for the Bot API on 127.0.0.1, for one bot token
// and the chats given: sendMessage keeps every message it accepted, and
// getUpdates long-polls the updates a test queues, as Telegram does (an
// offset acknowledges every update before it, which is never given
// again). It checks every call and keeps what was wrong with any of them
// (Violations): another token (401, as Telegram), a method it does not
// know, a body that is not JSON, a message to a chat not given, an offset
// that goes back.
type Telegram struct {
	URL string // the api_url to configure

	mu         sync.Mutex
	chats      []string
	msgs       []string
	sent       []TelegramSent
	updates    []map[string]any
	nextUpdate int64
	nextID     int64
	acked      int64 // the highest offset asked with
	offsets    []int64
	violations []string
	wake       chan struct{}
}

// TelegramSent is one message the stand-in accepted.
type TelegramSent struct {
	Chat    string
	ID      int64
	Text    string
	ReplyTo int64
}

// StartTelegram starts the stand-in for the test, for token and chats.
func StartTelegram(t testing.TB, token string, chats ...string) *Telegram {
	tg := &Telegram{chats: chats, nextUpdate: 1000, nextID: 1, wake: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bot" + token + "/sendMessage":
			tg.sendMessage(w, r)
		case "/bot" + token + "/getUpdates":
			tg.getUpdates(w, r)
		default:
			if strings.HasPrefix(r.URL.Path, "/bot") && !strings.HasPrefix(r.URL.Path, "/bot"+token+"/") {
				tg.violate("a call with another token")
				http.Error(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`, http.StatusUnauthorized)
				return
			}
			tg.violate("an unknown method: " + r.URL.Path)
			http.Error(w, `{"ok":false,"error_code":404,"description":"Not Found"}`, http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	tg.URL = srv.URL
	return tg
}

func (tg *Telegram) violate(what string) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.violations = append(tg.violations, what)
}

func (tg *Telegram) sendMessage(w http.ResponseWriter, r *http.Request) {
	var m struct {
		ChatID  string `json:"chat_id"`
		Text    string `json:"text"`
		ReplyTo struct {
			MessageID int64 `json:"message_id"`
		} `json:"reply_parameters"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil {
		tg.violate("sendMessage without a JSON body")
		http.Error(w, `{"ok":false,"error_code":400,"description":"Bad Request"}`, http.StatusBadRequest)
		return
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if !slices.Contains(tg.chats, m.ChatID) {
		tg.violations = append(tg.violations, "sendMessage to chat "+m.ChatID+", which is no person's")
		http.Error(w, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`, http.StatusBadRequest)
		return
	}
	if len([]rune(m.Text)) > 4096 {
		tg.violations = append(tg.violations, "sendMessage of more than 4096 characters")
		http.Error(w, `{"ok":false,"error_code":400,"description":"Bad Request: message is too long"}`, http.StatusBadRequest)
		return
	}
	id := tg.nextID
	tg.nextID++
	tg.msgs = append(tg.msgs, m.Text)
	tg.sent = append(tg.sent, TelegramSent{Chat: m.ChatID, ID: id, Text: m.Text, ReplyTo: m.ReplyTo.MessageID})
	chat, _ := strconv.ParseInt(m.ChatID, 10, 64)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": map[string]any{"message_id": id, "chat": map[string]any{"id": chat, "type": "private"}, "date": time.Now().Unix(), "text": m.Text}})
}

func (tg *Telegram) getUpdates(w http.ResponseWriter, r *http.Request) {
	var p struct {
		Offset  int64 `json:"offset"`
		Timeout int   `json:"timeout"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&p) != nil {
		tg.violate("getUpdates without a JSON body")
		http.Error(w, `{"ok":false,"error_code":400,"description":"Bad Request"}`, http.StatusBadRequest)
		return
	}
	deadline := time.NewTimer(time.Duration(p.Timeout) * time.Second)
	defer deadline.Stop()
	for {
		tg.mu.Lock()
		if p.Offset < tg.acked {
			tg.violations = append(tg.violations, fmt.Sprintf("getUpdates offset %d went back from %d", p.Offset, tg.acked))
		}
		tg.acked = max(tg.acked, p.Offset)
		tg.offsets = append(tg.offsets, p.Offset)
		var out []map[string]any
		for _, u := range tg.updates {
			if u["update_id"].(int64) >= p.Offset || u["again"] == true {
				delete(u, "again")
				out = append(out, u)
			}
		}
		// What is acknowledged is never given again.
		tg.updates = slices.DeleteFunc(tg.updates, func(u map[string]any) bool { return u["update_id"].(int64) < p.Offset })
		wake := tg.wake
		tg.mu.Unlock()
		if len(out) > 0 || p.Timeout == 0 {
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": out})
			return
		}
		select {
		case <-wake:
		case <-deadline.C:
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": []any{}})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// Send queues a message from chat, replying to the stand-in's message
// replyTo (0: none), and returns its update's id.
func (tg *Telegram) Send(chat string, replyTo int64, text string) int64 {
	return tg.queue("message", chat, replyTo, text)
}

// Edit queues an edited_message from chat: an edit of a message sent.
func (tg *Telegram) Edit(chat string, replyTo int64, text string) int64 {
	return tg.queue("edited_message", chat, replyTo, text)
}

func (tg *Telegram) queue(kind, chat string, replyTo int64, text string) int64 {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	id := tg.nextUpdate
	tg.nextUpdate++
	tg.updates = append(tg.updates, map[string]any{"update_id": id, kind: message(chat, 100000+id, replyTo, text)})
	tg.kick()
	return id
}

// Again gives the update id once more with the next getUpdates, even
// though it was acknowledged: what a restarted walkie must not act on
// twice. (Telegram itself never does it; the stand-in tests the guard.)
func (tg *Telegram) Again(id int64, kind, chat string, replyTo int64, text string) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	tg.updates = append(tg.updates, map[string]any{"update_id": id, kind: message(chat, 100000+id, replyTo, text), "again": true})
	tg.kick()
}

// message is a person's message id in their private chat, as the Bot API
// gives it, replying to the bot's message replyTo (0: none).
func message(chat string, id, replyTo int64, text string) map[string]any {
	cid, _ := strconv.ParseInt(chat, 10, 64)
	m := map[string]any{"message_id": id, "from": map[string]any{"id": cid, "is_bot": false},
		"chat": map[string]any{"id": cid, "type": "private"}, "date": time.Now().Unix(), "text": text}
	if replyTo != 0 {
		m["reply_to_message"] = map[string]any{"message_id": replyTo, "chat": map[string]any{"id": cid, "type": "private"}, "from": map[string]any{"id": 1, "is_bot": true}}
	}
	return m
}

func (tg *Telegram) kick() {
	close(tg.wake)
	tg.wake = make(chan struct{})
}

// Messages are the texts of the messages accepted so far.
func (tg *Telegram) Messages() []string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.msgs)
}

// Sent are the messages accepted so far, with their chats and ids.
func (tg *Telegram) Sent() []TelegramSent {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.sent)
}

// Offsets are the offsets getUpdates was called with, in order.
func (tg *Telegram) Offsets() []int64 {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.offsets)
}

// Pending is how many queued updates no getUpdates has acknowledged.
func (tg *Telegram) Pending() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	n := 0
	for _, u := range tg.updates {
		if u["update_id"].(int64) >= tg.acked {
			n++
		}
	}
	return n
}

// Violations are the calls that broke the Bot API's rules.
func (tg *Telegram) Violations() []string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.violations)
}
