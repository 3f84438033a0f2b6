// Package telegram is walkie's side of the Telegram Bot API, both ways:
// the messages walkie sends (a turn's news, a person's turn, a briefing to
// approve), remembered so that a reply can be routed back to its debate,
// and the long poll of getUpdates that turns the allow-listed people's
// replies and commands into what a person at a terminal would do: a reply
// is the person's turn through the enforced writer; /status, /halt,
// /resume, /extend, /note and /approve act on the debate the replied-to
// message is about.
//
// The poll keeps its offset on disk, with the update it is handling, so a
// restart neither loses an update nor acts on one twice; one process of
// the machine polls a bot at a time (an flock), since the Bot API serves
// getUpdates to one caller.
package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// TextLimit is sendMessage's limit on a message's text, in characters.
const TextLimit = 4096

// maxResponse bounds what one Bot API answer may be: a batch of updates
// is at most 100 messages of 4096 characters, so anything near this came
// from no Telegram (a stand-in, a proxy gone wrong) and is refused
// whole rather than held.
const maxResponse = 32 << 20

// Client calls the Bot API for one bot. Its endpoint holds the token, and
// is never logged: errors drop the URL.
type Client struct {
	endpoint string // https://api.telegram.org/botTOKEN
	http     *http.Client
}

// NewClient is the client of the bot whose token is token, at api (the
// config's api_url).
func NewClient(api, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{endpoint: strings.TrimSuffix(api, "/") + "/bot" + token, http: hc}
}

// User is a message's sender.
type User struct {
	ID    int64 `json:"id"`
	IsBot bool  `json:"is_bot"`
}

// Chat is where a message was sent.
type Chat struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
}

// Message is the part of a Bot API message walkie reads.
type Message struct {
	MessageID int64    `json:"message_id"`
	From      *User    `json:"from,omitempty"`
	Chat      Chat     `json:"chat"`
	Date      int64    `json:"date"`
	Text      string   `json:"text"`
	ReplyTo   *Message `json:"reply_to_message,omitempty"`
}

// Update is one of getUpdates' results.
type Update struct {
	UpdateID      int64    `json:"update_id"`
	Message       *Message `json:"message,omitempty"`
	EditedMessage *Message `json:"edited_message,omitempty"`
}

// APIError is an answer of the Bot API that is not ok.
type APIError struct {
	Status      int
	Description string
	RetryAfter  time.Duration // a 429's retry_after
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram: HTTP %d: %s", e.Status, e.Description)
}

// Permanent reports whether no retry can fix it: a client error other
// than a timeout or a rate limit.
func (e *APIError) Permanent() bool {
	return e.Status/100 == 4 && e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests
}

// call posts params to method and decodes the result into out.
func (c *Client) call(ctx context.Context, method string, params any, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint+"/"+method, bytes.NewReader(body))
	if err != nil {
		return errors.New("telegram: bad api_url")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, redact(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, redact(err))
	}
	if len(raw) > maxResponse {
		return fmt.Errorf("telegram %s: an answer of more than %d bytes, which no Bot API sends", method, maxResponse)
	}
	var r struct {
		OK          bool            `json:"ok"`
		Description string          `json:"description"`
		Result      json.RawMessage `json:"result"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	_ = json.Unmarshal(raw, &r)
	if resp.StatusCode/100 != 2 || !r.OK {
		return &APIError{Status: resp.StatusCode, Description: clip(strings.TrimSpace(r.Description), 200), RetryAfter: time.Duration(r.Parameters.RetryAfter) * time.Second}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("telegram %s: the result is not what the Bot API sends: %w", method, err)
	}
	return nil
}

// Send sends text to chat, as a reply to message replyTo when it is not
// 0, and returns the message's id.
func (c *Client) Send(ctx context.Context, chat string, text string, replyTo int64) (int64, error) {
	p := map[string]any{"chat_id": chat, "text": clip(text, TextLimit-100), "disable_web_page_preview": true}
	if replyTo != 0 {
		p["reply_parameters"] = map[string]any{"message_id": replyTo, "allow_sending_without_reply": true}
	}
	var m Message
	if err := c.call(ctx, "sendMessage", p, &m); err != nil {
		return 0, err
	}
	return m.MessageID, nil
}

// Updates long-polls getUpdates for the messages from offset on, waiting
// up to timeout for one. Passing offset acknowledges every update before
// it: the Bot API will not give those again.
func (c *Client) Updates(ctx context.Context, offset int64, timeout time.Duration) ([]Update, error) {
	var us []Update
	p := map[string]any{"offset": offset, "timeout": int(timeout / time.Second), "allowed_updates": []string{"message", "edited_message"}}
	err := c.call(ctx, "getUpdates", p, &us)
	return us, err
}

// redact drops the URL (which holds the bot token) from a client error.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// clip cuts s to at most n characters, saying so.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// ChatID is a chat's id as the config writes it.
func ChatID(id int64) string { return strconv.FormatInt(id, 10) }
