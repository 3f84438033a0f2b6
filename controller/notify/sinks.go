package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/walkie-sh/walkie/config"
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

// telegramSink sends the event's one-line summary with the Bot API's
// sendMessage. The token is read from the environment once, at New.
type telegramSink struct {
	endpoint string // API URL with the token in it: never logged
	chatID   string
	client   *http.Client
}

func newTelegram(cfg config.Telegram, o Options) (*telegramSink, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	name := cfg.TokenEnv
	if name == "" {
		name = config.DefaultTokenEnv
	}
	token := strings.TrimSpace(getenv(name))
	if token == "" {
		return nil, fmt.Errorf("notify.telegram: the bot token is not set: export %s (it is read from the environment, never from the config)", name)
	}
	api := cfg.APIURL
	if api == "" {
		api = config.DefaultTelegram
	}
	return &telegramSink{endpoint: strings.TrimSuffix(api, "/") + "/bot" + token + "/sendMessage", chatID: cfg.ChatID, client: o.HTTPClient}, nil
}

func (s *telegramSink) Name() string { return "telegram" }

// telegramLimit is sendMessage's limit on the text, in characters.
const telegramLimit = 4096

func (s *telegramSink) Send(ctx context.Context, e Event) error {
	body, _ := json.Marshal(map[string]any{
		"chat_id":                  s.chatID,
		"text":                     walkie.Clip(e.Summary(), telegramLimit-100),
		"disable_web_page_preview": true,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return Permanent(errors.New("telegram: bad api_url"))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("telegram: %w", redact(err))
	}
	defer resp.Body.Close()
	var r struct {
		OK          bool   `json:"ok"`
		Description string `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = json.Unmarshal(raw, &r)
	if resp.StatusCode == http.StatusTooManyRequests && r.Parameters.RetryAfter > 0 {
		return &retryAfterError{err: fmt.Errorf("telegram: rate limited: %s", r.Description), after: time.Duration(r.Parameters.RetryAfter) * time.Second}
	}
	if err := statusError("telegram", resp, []byte(r.Description)); err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("telegram: not ok: %s", r.Description)
	}
	return nil
}

// redact drops the URL (which holds the bot token) from a client error.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
