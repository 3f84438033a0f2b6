package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/daemon"
	"github.com/walkie-sh/walkie/walkie"
)

func serveCommand(f *Factory, runF func(context.Context, *serveOptions) error) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "the daemon: run every open debate under a directory, woken by file events",
		Description: `Finds every *.walkie.md under --dir (and new ones as they appear) and runs the
next turn of each open, approved debate whose next participant has a command
in the config, one fresh agent session per turn, under the config's limits:
max_sessions, and the per-agent limits of the machine's ledger, which every
walkie on it counts in (per_agent_sessions, per_agent_turns_per_hour,
per_agent_daily_usd). A person (people:) answers with walkie post, or by
replying on Telegram when the config's people have chats with the bot: the
daemon polls the bot for its life (docs/operations.md, "Telegram both
ways"); the daemon wakes on the change. walkie halt and walkie extend act at
once.

One daemon per directory: a second start names the pid holding the lock.
SIGTERM or SIGINT: no new turns; running turns get --grace, then are ended
and recorded as interrupted (they run again on the next start). A second
signal exits at once. SIGHUP: reload the config and log what changed, or why
the new one was refused (the old one keeps running). Killed outright, a
restarted daemon continues every debate where it was: no turn lost or run
twice.

HTTP (loopback unless --token is set): the fleet page at / (every debate,
its status, whose turn, round, cost against budget and what the running
agent is doing; each debate's entries, turn log, transcripts and round
table at /d/KEY; live by server-sent events; halt, resume, extend and a
supervisor note), /healthz, /api/debates (JSON), /metrics (Prometheus), and
POST /api/halt, resume, extend and note. The page lists the debates under
--dir; its switch (/?all=1) adds those walkie auto, turn and watch --once
run elsewhere on this machine (they note themselves in the registry under
the user's state directory), and a filter narrows either list. A debate's
page offers only the controls its standing allows.

A request whose Host is not the listen address, localhost or a loopback
address on the listen port, or an --allowed-host, is refused (421): a web
page that rebinds its own domain name to this machine reads nothing. A POST
from another site is refused; one from the page carries the page's CSRF
token. With --token every request but /healthz needs "Authorization: Bearer
TOKEN" or the page's session cookie: the page asks for the token once,
sends it as a header (never in a link) and gets an HttpOnly, SameSite=Strict
cookie that dies with the daemon. Idle connections are closed after 30s and
connections and event streams are capped, so no client can take the
descriptors the debates need. The threat model is in docs/operations.md.

--engine temporal: every debate becomes a Temporal workflow (its id the
debate's id) and each turn runs on a walkie worker machine that has the
agent's CLI, found by task queue (walkie-agent-AGENT, or --queue). This
daemon stays the home: it owns the files, decides and records every turn
exactly as the local engine does, and serves the same status, page and
notifications. walkie halt cancels the remote turn; limits become the
workers' slots and their queues' rates. Killed, a restarted home settles
the turns that finished meanwhile. Round tables run too: the implementer and
the reviewers on the workers, the hidden grader here. What is too large for
a Temporal payload travels by reference through the home's blob store
(--blobs); --blob-listen serves it to workers that share no filesystem with
the home. Setup and the policy mapping: docs/scale-out.md. The engine lives in walkie-temporal
(make install puts it beside walkie): a walkie built without it hands
--engine temporal to walkie-temporal (same process, arguments and
environment).

EXAMPLES:
   walkie serve --dir ~/debates
   walkie serve --dir . --listen 127.0.0.1:7433 --grace 5m
   WALKIE_TOKEN=s3cret walkie serve --dir /srv/walkie --listen 0.0.0.0:7433
   walkie serve --dir ~/debates --allowed-host walkie.example.com   # behind a reverse proxy
   walkie serve --dir ~/debates --engine temporal --temporal temporal.internal:7233 --namespace walkie
   WALKIE_BLOB_TOKEN=s3cret walkie serve --dir ~/debates --engine temporal --blob-listen 0.0.0.0:7434`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "engine", Value: "local", Usage: "local: turns run in this process's sessions; temporal: each debate is a Temporal workflow and its turns run on walkie worker machines (see docs/scale-out.md)"},
			&cli.StringFlag{Name: "home-queue", Usage: "with --engine temporal: this home's task queue (default walkie-home-HOST-HASH of --dir; keep it across restarts)"},
			&cli.StringFlag{Name: "blob-listen", Usage: "with --engine temporal: serve the home's blob store to workers on another machine at this HTTP address (beyond loopback it needs --blob-token)"},
			&cli.StringFlag{Name: "dir", Value: ".", Usage: "directory to serve: every *.walkie.md under it"},
			&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir); SIGHUP re-reads it"},
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7433", Usage: `HTTP address; "" for none; beyond loopback it needs --token`},
			&cli.StringFlag{Name: "token", EnvVars: []string{"WALKIE_TOKEN"}, Usage: "bearer token the HTTP API requires (needed to listen beyond loopback)"},
			&cli.StringSliceFlag{Name: "allowed-host", Usage: "a Host name the HTTP API also answers for, e.g. a reverse proxy's (NAME or NAME:PORT; repeatable; the config's serve.allowed_hosts adds more)"},
			&cli.DurationFlag{Name: "grace", Value: daemon.DefaultGrace, Usage: "after SIGTERM, how long running turns may finish before they are interrupted"},
			&cli.DurationFlag{Name: "rate-window", Hidden: true, Usage: "the rate limit's window (tests only; default an hour)"},
			logFormatFlag(),
			verboseFlag(),
		}, temporalFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return withCode(exitBadInput, fmt.Errorf("serve takes no arguments (use --dir %s)", c.Args().First()))
			}
			return runWith(c.Context, runF, serveRun, &serveOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry, Ledger: f.Ledger,
				Engine: c.String("engine"), HomeQueue: c.String("home-queue"), BlobListen: c.String("blob-listen"), Dir: c.String("dir"), ConfigPath: c.String("config"),
				Listen: c.String("listen"), Token: c.String("token"), AllowedHosts: c.StringSlice("allowed-host"),
				Grace: c.Duration("grace"), RateWindow: c.Duration("rate-window"),
				LogFormat: c.String("log-format"), Verbose: c.Bool("verbose"), Temporal: temporalFlagValues(c)})
		},
	}
}

// serveOptions are walkie serve's.
type serveOptions struct {
	IO       *IOStreams
	Config   func(path string) (*config.Config, error)
	Logger   func(format string, verbose bool) (*zap.Logger, error)
	Registry func(log *zap.Logger) string
	Ledger   func(log *zap.Logger) string

	Engine       string // local or temporal
	HomeQueue    string
	BlobListen   string
	Dir          string
	ConfigPath   string
	Listen       string
	Token        string
	AllowedHosts []string
	Grace        time.Duration
	RateWindow   time.Duration
	LogFormat    string
	Verbose      bool
	Temporal     temporalOptions
}

func serveRun(ctx context.Context, o *serveOptions) error {
	engine := o.Engine
	switch engine {
	case "local":
	case "temporal":
		if err := handOffToTemporal("walkie serve"); err != nil {
			return err
		}
	default:
		return withCode(exitBadInput, fmt.Errorf("--engine %q: write local or temporal", engine))
	}
	stderr := o.IO.ErrOut
	log, cfg, err := loggerAndConfig(o.Logger, o.Config, o.LogFormat, o.Verbose, o.ConfigPath)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	for _, h := range o.AllowedHosts {
		if err := config.CheckHost(h); err != nil {
			return withCode(exitBadInput, fmt.Errorf("--allowed-host: %w", err))
		}
	}
	ledgerPath, err := usableLedger(cfg, o.Ledger(log), log)
	if err != nil {
		return err
	}
	opts := daemon.Options{Dir: o.Dir, Config: cfg, ConfigPath: o.ConfigPath,
		Listen: o.Listen, Token: o.Token, AllowedHosts: o.AllowedHosts, Grace: o.Grace, RateWindow: o.RateWindow, Log: log,
		Registry: o.Registry(log), Ledger: ledgerPath}
	var home remoteHome
	if engine == "temporal" {
		if home, err = newHome(ctx, o, cfg, log); err != nil {
			return err
		}
		opts.Run = home.Run
	}
	d, err := daemon.New(opts)
	if home != nil {
		// Started once the daemon holds the directory, and stopped after
		// it: the home's steps in progress finish first. Temporal gives a
		// workflow's task to one worker at a time, so a home started
		// meanwhile never runs a step of the same debate at once.
		if err == nil {
			err = home.Start()
		}
		defer home.Stop()
	}
	switch {
	case errors.Is(err, walkie.ErrLocked), errors.Is(err, daemon.ErrNeedToken):
		return withCode(exitBadInput, err)
	case err != nil:
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ran := make(chan struct{})
	defer close(ran)
	go func() {
		stopping := false
		for {
			select {
			case <-ran:
				return
			case s := <-sigs:
				switch {
				case s == syscall.SIGHUP:
					_ = d.Reload() // it logs what changed, or why the new config was refused
				case stopping:
					fmt.Fprintln(stderr, "walkie: second signal; exiting now (interrupted turns are recovered on the next start)")
					os.Exit(exitSignal)
				default:
					stopping = true
					cancel()
				}
			}
		}
	}()
	// Replies and commands from Telegram, for the daemon's life.
	polled, err := pollServed(ctx, d.Config, d.Dir(), opts.Registry, log)
	if err != nil {
		return err
	}
	err = d.Run(ctx)
	cancel()
	<-polled
	return err
}

// remoteHome is the Temporal engine's home of --dir's debates
// (controller/temporal.Home; newHome makes one in the temporal build).
type remoteHome interface {
	Run(context.Context, controller.Options) (controller.Summary, error)
	Start() error
	Stop()
}
