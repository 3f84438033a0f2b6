package telegram

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// ForConfig is the client and the store of the config's bot: its api_url,
// and the token from the variable token_env names (getenv; nil reads the
// environment), which must be set. The store is nil, with no error, where
// the user has no state directory: messages can go out, but nothing can
// come back.
func ForConfig(cfg config.Telegram, getenv func(string) string, hc *http.Client) (*Client, *Store, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	name := cfg.TokenEnv
	if name == "" {
		name = config.DefaultTokenEnv
	}
	token := strings.TrimSpace(getenv(name))
	if token == "" {
		return nil, nil, fmt.Errorf("notify.telegram: the bot token is not set: export %s (it is read from the environment, never from the config)", name)
	}
	api := cfg.APIURL
	if api == "" {
		api = config.DefaultTelegram
	}
	store, err := StoreFor(token)
	if err != nil {
		store = nil
	}
	return NewClient(api, token, hc), store, nil
}

// TwoWay reports whether the config's Telegram answers too: a bot is
// configured and some person has a chat with it.
func TwoWay(cfg *config.Config) bool {
	if !cfg.Notify.Telegram.Enabled() {
		return false
	}
	for _, p := range cfg.People {
		if p.Telegram != "" {
			return true
		}
	}
	return false
}

// PollClient is what a long poll needs from the Bot API: a client whose
// timeout outlasts getUpdates' wait.
func PollClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout + 20*time.Second}
}

// WhileWaiting runs the bot while a run waits for a person, as walkie
// auto does: observe starts the poll at a waiting event and stops it when
// a turn starts or the debate ends; stop ends it for good. A poll another
// process holds (walkie serve's) is left to it.
func WhileWaiting(ctx context.Context, b *Bot) (observe func(controller.Event), stop func()) {
	var mu sync.Mutex
	var cancel context.CancelFunc
	var done chan struct{}
	end := func() {
		if cancel != nil {
			cancel()
			<-done
			cancel, done = nil, nil
		}
	}
	observe = func(e controller.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case controller.EventWaiting:
			if cancel != nil {
				return
			}
			var pctx context.Context
			pctx, cancel = context.WithCancel(ctx)
			done = make(chan struct{})
			go func(done chan struct{}) {
				defer close(done)
				if err := b.Run(pctx); err == ErrPolling {
					b.o.Log.Debug("telegram: another walkie polls the bot; it takes the replies")
				} else if err != nil {
					b.o.Log.Warn("telegram: the poll stopped", zap.Error(err))
				}
			}(done)
		case controller.EventTurnStarted, controller.EventDebateEnded:
			end()
		}
	}
	stop = func() {
		mu.Lock()
		defer mu.Unlock()
		end()
	}
	return observe, stop
}

// SendBriefing sends the briefing of file to the chat of the debate's
// supervisor (or to chat, the config's), for approval: a reply /approve
// to it pins exactly the text sent. It returns the chat it went to.
func SendBriefing(ctx context.Context, c *Client, s *Store, cfg *config.Config, file string) (string, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return "", err
	}
	if d.Meta.BriefingSHA256 != "" {
		return "", &walkie.RefusedError{Op: "send", Reason: file + ": the briefing is approved already"}
	}
	chat, who := cfg.Notify.Telegram.ChatID, "the config's chat"
	if p, ok := cfg.People[d.Meta.Supervisor]; ok && p.Telegram != "" {
		chat, who = p.Telegram, d.Meta.Supervisor+"'s chat"
	}
	if chat == "" {
		return "", &walkie.InputError{File: file, Msg: "no chat to send the briefing to", Fix: "set notify.telegram.chat_id, or name a supervisor with a telegram chat under people:"}
	}
	sha := walkie.BriefingHash(d.Briefing)
	parts := split(string(d.Briefing), TextLimit-400)
	for i, part := range parts {
		text := fmt.Sprintf("%s: the briefing, for approval (%d of %d)\n\n%s", d.Meta.ID, i+1, len(parts), part)
		if i == len(parts)-1 {
			text += fmt.Sprintf("\n\nReply /approve to this message to approve it as sent (sha256 %s).", sha[:12])
		}
		id, err := c.Send(ctx, chat, text, 0)
		if err != nil {
			return "", err
		}
		if err := s.Remember(Sent{Chat: chat, MessageID: id, File: d.File, Debate: d.Meta.ID, Kind: KindBriefing, SHA256: sha, At: time.Now().UTC()}); err != nil {
			return "", err
		}
	}
	return who, nil
}

// split cuts s into pieces of at most n characters, at line ends where it
// can.
func split(s string, n int) []string {
	var out []string
	for len([]rune(s)) > n {
		r := []rune(s)
		cut := strings.LastIndex(string(r[:n]), "\n")
		if cut <= 0 {
			cut = len(string(r[:n]))
		}
		out = append(out, s[:cut])
		s = strings.TrimLeft(s[cut:], "\n")
	}
	return append(out, s)
}
