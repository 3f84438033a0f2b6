package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/notify"
	"github.com/walkie-sh/walkie/controller/watch"
)

func watchCommand(f *Factory, runF func(context.Context, *watchOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "watch",
		Usage:     "one tick for cron: invoke whoever is due, retry once, then tell the supervisor",
		ArgsUsage: "PATH",
		Description: `For each debate at PATH (a walkie file, or every *.walkie.md under a directory),
invoke the next participant, that is run its turn, only if it has a command
in the config, it is its turn, its debounce since the last entry has passed
(a live session may be about to answer by itself), and it was not already
invoked for this sequence number. If the record has not moved --retry-after
after an invocation, the participant is invoked once more; after another
--retry-after the supervisor is told (an escalation to the notify sinks),
once per sequence number. Participants without a command (a person, a live
session) answer with walkie post and are never invoked. A round table runs
one step per tick, each whole: the implementer's turn, a phase, or a round's
reviews at once (a phase that awaits approval is waiting for a person). The
tick remembers what it did in .walkie/ID/log.jsonl, never in the walkie
file. A debate
another controller is running is left alone, so overlapping ticks are safe.
A debate walkie serve --engine temporal runs is refused (exit 3 when
nothing else failed); --take-over takes it back once that home is gone for
good (docs/scale-out.md).

EXAMPLES:
   # crontab: every minute
   * * * * *  cd ~/debates && walkie watch --once . --log-format json >>watch.log 2>&1
   walkie watch --once api.walkie.md --retry-after 10m`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "once", Usage: "run one tick and exit (required: for a long-running process use walkie serve)"},
			&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir)"},
			&cli.DurationFlag{Name: "retry-after", Usage: "wait this long after an invocation before the retry, and after the retry before escalating (default: the agent's debounce)"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per debate"},
			takeOverFlag(),
			logFormatFlag(),
			verboseFlag(),
		}, notifyFlags()...),
		Action: func(c *cli.Context) error {
			if !c.Bool("once") {
				return withCode(exitBadInput, errors.New("watch runs one tick: use walkie watch --once PATH from cron, or walkie serve for a daemon"))
			}
			if c.NArg() != 1 {
				return withCode(exitBadInput, fmt.Errorf("watch needs exactly one PATH argument (got %s)", argCount(c.NArg())))
			}
			return runWith(c.Context, runF, watchRun, &watchOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry, Ledger: f.Ledger,
				Path: c.Args().First(), ConfigPath: c.String("config"), RetryAfter: c.Duration("retry-after"), JSON: c.Bool("json"),
				TakeOver: c.Bool("take-over"), LogFormat: c.String("log-format"), Verbose: c.Bool("verbose"), Notify: notifyFlagValues(c)})
		},
	}
}

// watchOptions are walkie watch --once's.
type watchOptions struct {
	IO       *IOStreams
	Config   func(path string) (*config.Config, error)
	Logger   func(format string, verbose bool) (*zap.Logger, error)
	Registry func(log *zap.Logger) string
	Ledger   func(log *zap.Logger) string

	Path       string // a walkie file, or a directory of them
	ConfigPath string
	RetryAfter time.Duration
	JSON       bool
	TakeOver   bool
	LogFormat  string
	Verbose    bool
	Notify     notifyOptions
}

func watchRun(ctx context.Context, o *watchOptions) error {
	log, cfg, err := loggerAndConfig(o.Logger, o.Config, o.LogFormat, o.Verbose, o.ConfigPath)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	// Queued notifications (an escalation above all) get a chance to go
	// out before the tick exits.
	n, stopNotify, err := startNotifier(o.IO, o.Notify, cfg, log)
	if err != nil {
		return err
	}
	defer stopNotify()
	ctx, stop := interruptible(ctx, o.IO.ErrOut)
	defer stop()
	// A tick never waits for a slot: a party a limit holds is waiting,
	// and the next tick looks again.
	limits, err := newLimiter(cfg, o.Ledger(log), log)
	if err != nil {
		return err
	}
	defer limits.Close()
	tryAcquire := func(_ context.Context, agent string) (func(float64), error) {
		release, held, err := limits.Try(agent)
		if held != nil {
			return nil, held
		}
		return release, err
	}
	results, err := watch.Once(ctx, watch.Options{Path: o.Path, Config: cfg, Log: log,
		Observe: notify.Observer(n), CopyEntries: n.CopySupervisor(), RetryAfter: o.RetryAfter, Registry: o.Registry(log), TakeOver: o.TakeOver,
		Held: limits.Blocked, Acquire: tryAcquire})
	failed, refused := 0, 0
	for _, r := range results {
		switch r.Action {
		case watch.Error:
			failed++
		case watch.Refused:
			refused++
		}
		if o.JSON {
			b, _ := json.Marshal(r)
			fmt.Fprintln(o.IO.Out, string(b))
			continue
		}
		fmt.Fprintln(o.IO.Out, term.Clean(fmt.Sprintf("%s: %s: %s", r.File, r.Action, r.Detail)))
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return withCode(exitSignal, errors.New("interrupted; the next tick continues"))
	case err != nil:
		return withCode(exitBadInput, err)
	case failed > 0:
		return withCode(exitError, fmt.Errorf("%d of %d debates could not be looked at", failed, len(results)))
	case refused > 0:
		return withCode(exitRefused, fmt.Errorf("%d of %d debates are run by a walkie serve --engine temporal home and were left to it", refused, len(results)))
	}
	return nil
}
