package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/telegram"
	"github.com/walkie-sh/walkie/walkie"
)

// commandSink runs a command per event with the event JSON on stdin.
type commandSink struct {
	argv    []string
	timeout time.Duration
}

func (s *commandSink) Name() string { return "command" }

func (s *commandSink) Send(ctx context.Context, e Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return Permanent(err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.argv[0], s.argv[1:]...)
	cmd.Stdin = bytes.NewReader(append(body, '\n'))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so a timeout ends the command and anything
	// it started, not just the leader.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
		return Permanent(fmt.Errorf("notify command %s: %w", s.argv[0], err))
	case errors.As(err, &exitErr):
		return fmt.Errorf("notify command %s: %w: %s", s.argv[0], err, walkie.Clip(strings.TrimSpace(out.String()), 300))
	}
	return fmt.Errorf("notify command %s: %w", s.argv[0], err)
}

// webhookSink POSTs the event JSON.
type webhookSink struct {
	url     string
	headers map[string]string
	client  *http.Client
}

func (s *webhookSink) Name() string { return "webhook" }

func (s *webhookSink) Send(ctx context.Context, e Event) error {
	body, err := json.Marshal(e)
	if err != nil {
		return Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "walkie")
	for k, v := range s.headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return statusError("webhook", resp, msg)
}

// statusError turns a non-2xx response into an error; a client error
// other than a timeout or a rate limit is permanent.
func statusError(who string, resp *http.Response, msg []byte) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err := fmt.Errorf("%s: HTTP %d: %s", who, resp.StatusCode, walkie.Clip(strings.TrimSpace(string(msg)), 200))
	if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
		return Permanent(err)
	}
	return err
}

// telegramSink sends the event's one-line summary to the config's chat
// with the Bot API's sendMessage, and a person's turn also to that
// person's own chat, inviting a reply; every message sent is remembered
// in the bot's store, so that a reply to it reaches its debate
// (controller/telegram). The token is read from the environment once, at
// New.
type telegramSink struct {
	client *telegram.Client
	store  *telegram.Store // nil: nothing remembered (no state directory)
	chatID string
	people map[string]config.Person
	log    *zap.Logger
}

func newTelegram(cfg config.Telegram, o Options) (*telegramSink, error) {
	client, store, err := telegram.ForConfig(cfg, o.Getenv, o.HTTPClient)
	if err != nil {
		return nil, err
	}
	if store == nil {
		o.Log.Warn("telegram: no state directory for the messages sent; a reply to one will not reach its debate")
	}
	return &telegramSink{client: client, store: store, chatID: cfg.ChatID, people: o.People, log: o.Log}, nil
}

func (s *telegramSink) Name() string { return "telegram" }

func (s *telegramSink) Send(ctx context.Context, e Event) error {
	if err := s.send(ctx, s.chatID, e, e.Summary()); err != nil {
		return err
	}
	if e.Kind != KindWaiting {
		return nil
	}
	// The person whose turn it is hears it in their own chat, where a
	// reply to the message is their turn.
	if p, ok := s.people[e.Agent]; ok && p.Telegram != "" && p.Telegram != s.chatID {
		return s.send(ctx, p.Telegram, e, YourTurn(e))
	}
	return nil
}

// send sends text about e to chat, and remembers the message.
func (s *telegramSink) send(ctx context.Context, chat string, e Event, text string) error {
	id, err := s.client.Send(ctx, chat, text, 0)
	var ae *telegram.APIError
	switch {
	case errors.As(err, &ae) && ae.RetryAfter > 0:
		return &retryAfterError{err: err, after: ae.RetryAfter}
	case errors.As(err, &ae) && ae.Permanent():
		return Permanent(err)
	case err != nil:
		return err
	}
	if s.store == nil {
		return nil
	}
	m := telegram.Sent{Chat: chat, MessageID: id, File: e.File, Debate: e.Debate, Kind: e.Kind, Turn: e.Turn, Agent: e.Agent, At: time.Now().UTC()}
	if err := s.store.Remember(m); err != nil {
		s.log.Warn("telegram: the message sent was not remembered; a reply to it will not reach its debate", zap.Error(err))
	}
	return nil
}

// YourTurn is a person's message at their turn: what was said last, and
// how to answer by replying.
func YourTurn(e Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: turn %d is yours, %s.", e.Debate, e.Turn, e.Agent)
	if d, err := walkie.Load(e.File); err == nil && len(d.Entries) > 0 {
		last := d.Entries[len(d.Entries)-1]
		who := last.Agent
		if last.Kind == walkie.KindTurn {
			who = fmt.Sprintf("Turn %d · %s", last.Turn, last.Agent)
		}
		fmt.Fprintf(&b, "\n\n%s:\n%s", who, walkie.Clip(strings.TrimSpace(string(last.Body)), 3000))
	}
	fmt.Fprintf(&b, "\n\nReply to this message with your turn; end it with a line \"Signed-off-by: %s\" to sign off. /status says where the debate stands.", e.Agent)
	return b.String()
}
