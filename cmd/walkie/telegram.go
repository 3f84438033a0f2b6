package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/telegram"
	"github.com/walkie-sh/walkie/walkie"
)

// pollTimeout is getUpdates' long poll.
const pollTimeout = 50 * time.Second

// newBot is the poll of the config's bot (nil when Telegram is not
// configured both ways: no bot, or no person with a chat), acting on
// debates (what a message names none of), with the config cfg gives.
func newBot(cfg func() *config.Config, debates func() []string, registry string, log *zap.Logger) (*telegram.Bot, error) {
	if !telegram.TwoWay(cfg()) {
		return nil, nil
	}
	client, store, err := telegram.ForConfig(cfg().Notify.Telegram, nil, telegram.PollClient(pollTimeout))
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	if store == nil {
		log.Warn("telegram: no state directory to keep the poll's offset in; replies from Telegram are not taken")
		return nil, nil
	}
	return telegram.New(telegram.Options{Client: client, Store: store, Config: cfg, Debates: debates, Registry: registry,
		Log: log.Named("telegram"), PollTimeout: pollTimeout}), nil
}

// pollServed polls the bot for walkie serve until ctx ends: the debates
// under dir and in the registry are the ones a message may name by id.
func pollServed(ctx context.Context, cfg func() *config.Config, dir, registry string, log *zap.Logger) (done <-chan struct{}, err error) {
	debates := func() []string {
		files, _ := walkie.Find(dir)
		regs, _ := walkie.ReadRegistry(registry)
		for _, r := range regs {
			files = append(files, r.File)
		}
		return files
	}
	bot, err := newBot(cfg, debates, registry, log)
	ch := make(chan struct{})
	if err != nil || bot == nil {
		close(ch)
		return ch, err
	}
	go func() {
		defer close(ch)
		err := bot.Run(ctx)
		switch {
		case errors.Is(err, telegram.ErrPolling):
			log.Warn("telegram: another walkie polls this bot; replies go to it")
		case err != nil:
			log.Error("telegram: the poll stopped; replies from Telegram are not taken until a restart", zap.Error(err))
		}
	}()
	return ch, nil
}

// pollWhileWaiting is walkie auto's poll of the bot, while the debate in
// file waits for a person: observe follows the run's events.
func pollWhileWaiting(ctx context.Context, cfg *config.Config, file, registry string, log *zap.Logger) (observe func(controller.Event), stop func(), err error) {
	bot, err := newBot(func() *config.Config { return cfg }, func() []string { return []string{file} }, registry, log)
	if err != nil || bot == nil {
		return func(controller.Event) {}, func() {}, err
	}
	observe, stop = telegram.WhileWaiting(ctx, bot)
	return observe, stop, nil
}

func briefSendCommand(f *Factory, runF func(context.Context, *briefSendOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "send the briefing to the supervisor's Telegram chat, for approval from the phone",
		ArgsUsage: "FILE",
		Description: `Sends the unapproved briefing to the Telegram chat of the debate's supervisor
(supervisor: in the front matter, with a chat under people: in walkie.yaml),
else to notify.telegram.chat_id, in as many messages as it takes. A reply
/approve to one of them pins exactly the text that was sent, through the same
approval as walkie brief approve; a briefing changed since is refused. The
reply is taken by whichever walkie polls the bot (walkie serve, or walkie auto
while a person's turn is open): docs/operations.md, "Telegram both ways".

EXAMPLES:
   walkie brief send api.walkie.md`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir)"}},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, briefSendRun, &briefSendOptions{IO: f.IO, Config: f.Config, ConfigPath: c.String("config"), File: file})
		},
	}
}

// briefSendOptions are walkie brief send's.
type briefSendOptions struct {
	IO         *IOStreams
	Config     func(path string) (*config.Config, error)
	ConfigPath string
	File       string
}

func briefSendRun(ctx context.Context, o *briefSendOptions) error {
	cfg, err := o.Config(o.ConfigPath)
	if err != nil {
		return err
	}
	if !cfg.Notify.Telegram.Enabled() {
		return withCode(exitBadInput, fmt.Errorf("brief send needs notify.telegram in the config (%s): see docs/configuration.md", cfg.Path))
	}
	client, store, err := telegram.ForConfig(cfg.Notify.Telegram, nil, nil)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	if store == nil {
		return errors.New("brief send: no state directory to remember the message in, so a reply to it could not be taken")
	}
	who, err := telegram.SendBriefing(ctx, client, store, cfg, o.File)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "%s: the briefing was sent to %s for approval (reply /approve to it)\n", o.File, who)
	return nil
}
