package blackbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Telegram is a stand-in for the Bot API's sendMessage on 127.0.0.1,
// for one bot token and one chat, that keeps every message it accepted.
type Telegram struct {
	URL  string // the api_url to configure
	mu   sync.Mutex
	msgs []string
}

// StartTelegram starts the stand-in for the test. A request for another
// token is refused as Telegram does (401); another chat, or a body that
// is not a message, is a bad request (400).
func StartTelegram(t testing.TB, token, chatID string) *Telegram {
	tg := &Telegram{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/bot"+token+"/sendMessage" {
			http.Error(w, `{"ok":false,"description":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var m struct {
			ChatID string `json:"chat_id"`
			Text   string `json:"text"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || m.ChatID != chatID {
			http.Error(w, `{"ok":false}`, http.StatusBadRequest)
			return
		}
		tg.mu.Lock()
		tg.msgs = append(tg.msgs, m.Text)
		tg.mu.Unlock()
		fmt.Fprint(w, `{"ok":true,"result":{}}`)
	}))
	t.Cleanup(srv.Close)
	tg.URL = srv.URL
	return tg
}

// Messages are the texts of the messages accepted so far.
func (tg *Telegram) Messages() []string {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return slices.Clone(tg.msgs)
}
