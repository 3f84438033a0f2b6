package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/notify"
	"github.com/walkie-sh/walkie/walkie"
)

// defaultNotifyTimeout is how long, at exit, queued notifications may
// take to go out, unless --notify-timeout says otherwise.
const defaultNotifyTimeout = 30 * time.Second

// notifyFlags are the flags of every one-shot form that notifies (auto,
// turn, watch).
func notifyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "no-notify", Usage: "send nothing to the config's notify sinks for this run"},
		&cli.DurationFlag{Name: "notify-timeout", Value: defaultNotifyTimeout, Usage: "at exit, how long queued notifications may take to go out (what is left is reported)"},
	}
}

// notifyOptions are what notifyFlags say.
type notifyOptions struct {
	Off     bool          // --no-notify
	Timeout time.Duration // --notify-timeout
}

// notifyFlagValues reads notifyFlags.
func notifyFlagValues(c *cli.Context) notifyOptions {
	return notifyOptions{Off: c.Bool("no-notify"), Timeout: c.Duration("notify-timeout")}
}

// startNotifier builds the config's sinks for a one-shot run; stop drains
// the queue before the process exits, bounded by --notify-timeout, and
// says on stderr what could not be delivered in time. With --no-notify,
// or no sink configured, it is a notifier that drops everything.
func startNotifier(streams *IOStreams, o notifyOptions, cfg *config.Config, log *zap.Logger) (n *notify.Notifier, stop func(), err error) {
	if o.Off {
		return nil, func() {}, nil
	}
	n, err = notify.New(cfg.Notify, notify.Options{Log: log.Named("notify"), People: cfg.People})
	if err != nil {
		return nil, nil, withCode(exitBadInput, fmt.Errorf("%w (or run with --no-notify)", err))
	}
	return n, func() { drain(n, o.Timeout, streams.ErrOut, log) }, nil
}

func drain(n *notify.Notifier, timeout time.Duration, stderr io.Writer, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		log.Warn("notifications lost at exit", zap.Duration("timeout", timeout), zap.Error(err))
		fmt.Fprintf(stderr, "walkie: %v; raise --notify-timeout if the sinks are slow\n", err)
	}
}

// notifyObserver sends a run's events to n and, when the debate (walkie
// notify --copy, in its state directory dir) or the config asks for it, a
// copy of each new entry to the supervisor: the same notifier, events and
// copies as walkie serve and walkie watch send.
func notifyObserver(file, dir string, n *notify.Notifier) func(controller.Event) {
	send := notify.Observer(n)
	return func(e controller.Event) {
		send(e)
		switch e.Kind {
		case controller.EventTurnStarted, controller.EventTurnRecorded, controller.EventWaiting, controller.EventDebateEnded:
			// A look after each step: the agent's turn, or a person's
			// post that woke a waiting run. CopyEntries sends each entry
			// once, whoever looks.
			if n.Enabled() && notify.CopyWantedIn(dir, n.CopySupervisor()) {
				_, _ = notify.CopyEntries(file, send)
			}
		}
	}
}

func notifyCommand(f *Factory, runF func(context.Context, *notifyCmdOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "notify",
		Usage:     "switch the supervisor's copy of every entry on or off for one debate",
		ArgsUsage: "FILE",
		Description: `Every form of the controller (walkie auto, turn, watch and serve) sends
notification events to the sinks in the config (command, webhook,
Telegram). The supervisor also gets a copy of every new turn: on for a
debate made by walkie init (init --copy off starts without), and for older
debates as notify.copy_supervisor says. This command switches it for one
debate. The switch lives in .walkie/ID/log.jsonl, never in the record, and
a running controller follows it from the next entry on.

EXAMPLES:
   walkie notify api.walkie.md --copy off      # this debate: no copies
   walkie notify api.walkie.md --copy on       # this debate: copy every turn
   walkie notify api.walkie.md --copy default  # follow the config again`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "copy", Usage: "on, off, or default (follow notify.copy_supervisor in the config)"},
		},
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			opts := &notifyCmdOptions{IO: f.IO, File: file, Copy: c.String("copy")}
			switch opts.Copy {
			case "on", "off":
				b := opts.Copy == "on"
				opts.Set = &b
			case "default":
			case "":
				return withCode(exitBadInput, errors.New("notify needs --copy on, off or default; see `walkie notify --help`"))
			default:
				return withCode(exitBadInput, fmt.Errorf("--copy %q: use on, off or default", opts.Copy))
			}
			return runWith(c.Context, runF, notifyRun, opts)
		},
	}
}

// notifyCmdOptions are walkie notify's: the debate, and its copy switch.
type notifyCmdOptions struct {
	IO   *IOStreams
	File string
	Copy string // on, off or default, as given
	Set  *bool  // what it sets: nil follows the config
}

func notifyRun(_ context.Context, o *notifyCmdOptions) error {
	_, _, err := walkie.UpdateState(o.File, walkie.OpCopy, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
		s.CopySupervisor = o.Set
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "%s: supervisor copies %s\n", o.File, map[string]string{"on": "on", "off": "off", "default": "follow the config"}[o.Copy])
	return nil
}
