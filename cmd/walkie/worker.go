package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
)

// defaultWorkerGrace is the worker's --grace default: it is written here,
// in code both builds compile, so their --help is the same; the temporal
// build checks it against controller/temporal's (temporal_linked.go).
const defaultWorkerGrace = 2 * time.Minute

// temporalOptions are what temporalFlags say.
type temporalOptions struct {
	HostPort, Namespace string
	Queues              []string // AGENT=QUEUE, as given
	TLS                 bool
	CA, Cert, Key       string
	APIKey              string
	// Blobs and BlobToken: the home's blob store as this machine reaches
	// it (--blobs, --blob-token).
	Blobs, BlobToken string
}

// temporalFlagValues reads temporalFlags.
func temporalFlagValues(c *cli.Context) temporalOptions {
	return temporalOptions{HostPort: c.String("temporal"), Namespace: c.String("namespace"), Queues: c.StringSlice("queue"), TLS: c.Bool("tls"),
		CA: c.String("tls-ca"), Cert: c.String("tls-cert"), Key: c.String("tls-key"), APIKey: c.String("api-key"),
		Blobs: c.String("blobs"), BlobToken: c.String("blob-token")}
}

// temporalFlags connect to a Temporal cluster; serve and worker share them.
func temporalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "temporal", Value: "127.0.0.1:7233", EnvVars: []string{"TEMPORAL_ADDRESS"}, Usage: "Temporal frontend HOST:PORT"},
		&cli.StringFlag{Name: "namespace", Value: "default", EnvVars: []string{"TEMPORAL_NAMESPACE"}, Usage: "Temporal namespace; debate ids must be unique in it"},
		&cli.StringSliceFlag{Name: "queue", Usage: "AGENT=QUEUE: the task queue of an agent's workers (default walkie-agent-AGENT); repeatable, the same on the home and the workers"},
		&cli.BoolFlag{Name: "tls", EnvVars: []string{"TEMPORAL_TLS"}, Usage: "connect to Temporal over TLS (implied by the other TLS flags and an API key)"},
		&cli.StringFlag{Name: "tls-ca", EnvVars: []string{"TEMPORAL_TLS_CA"}, Usage: "PEM file of the CAs to trust for Temporal, instead of the system's"},
		&cli.StringFlag{Name: "tls-cert", EnvVars: []string{"TEMPORAL_TLS_CERT"}, Usage: "client certificate (PEM) for a Temporal cluster that wants mTLS"},
		&cli.StringFlag{Name: "tls-key", EnvVars: []string{"TEMPORAL_TLS_KEY"}, Usage: "the client certificate's key (PEM)"},
		&cli.StringFlag{Name: "api-key", EnvVars: []string{"TEMPORAL_API_KEY"}, Usage: "API key for a Temporal cluster that takes them (give it in the environment, not on the command line)"},
		&cli.StringFlag{Name: "blobs", EnvVars: []string{"WALKIE_BLOBS"}, Usage: "the blob store for what travels by reference (large records, transcripts, round-table workspaces): a directory (the home's, or one every machine mounts), or on a worker the home's --blob-listen URL (default $XDG_STATE_HOME/walkie/blobs)"},
		&cli.StringFlag{Name: "blob-token", EnvVars: []string{"WALKIE_BLOB_TOKEN"}, Usage: "bearer token of the home's --blob-listen (give it in the environment)"},
	}
}

func workerCommand(f *Factory, runF func(context.Context, *workerOptions) error) *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "run debate turns for a Temporal-run home (walkie serve --engine temporal) on this machine",
		Description: `Polls one Temporal task queue per agent in --agents (walkie-agent-AGENT, or
--queue AGENT=QUEUE) and runs each turn it takes with the same engine as
walkie auto: the agent's configured command in a fresh pseudo-terminal, on a
copy of the record in --dir, with this machine's login, environment and
screen rules. The home's prompt template and timing (timeout, stall, grace)
govern the session. While the agent runs, the worker heartbeats the output's
size and latest line; a worker that dies is noticed within the heartbeat
timeout (the agent's stall window, between 5s and 1m) and the turn goes to
another worker. The agent's version of the file, the session's result and
the transcripts (whole; a copy stays in --dir) go back to the home, which
judges and records the turn.

Debates that run in git worktrees (workspace: worktree): give the worker a
clone of each repository with --repo PATH (repeatable). The home sends the
commit the turn starts at and its branch (walkie/ID/turn-N); the worker
fetches the commit from the clone's origin if the clone lacks it, makes the
worktree under --dir, runs the agent there, removes it afterwards, and sends
what the agent committed home as a git bundle (at most 1 GiB), where it
becomes the turn's branch.

A round table's implementer works on a copy of the workspace the home
sends, and what it changed goes back; its reviewers and phases run in
sandboxes the home fills. What is too large for a Temporal payload (a long
record, transcripts, a workspace) travels by reference: --blobs is the
home's blob store as this machine reaches it, the directory the home's
--blobs names (shared, or this same machine), or the URL of the home's
--blob-listen. The home and every worker must run the same walkie: each
activity starts by comparing versions, and a mismatch is refused, naming
both.

Limits from the config: per_agent_sessions (else max_sessions) is how many
sessions of an agent this worker runs at once; per_agent_turns_per_hour is
the rate of the agent's task queue across all its workers.

SIGTERM or SIGINT: no new turns; running turns get --grace, then their
sessions are ended and recorded as interrupted (another worker runs them
again). A worker killed outright leaves its turns to the heartbeat timeout,
and the next start ends the agents it left running. See docs/scale-out.md.

The Temporal engine lives in walkie-temporal (make install puts it beside
walkie): a walkie built without it hands this command to walkie-temporal
(same process, arguments and environment).

EXAMPLES:
   walkie worker --agents claude,codex
   walkie worker --temporal temporal.internal:7233 --namespace walkie --agents codex
   walkie worker --agents codex --queue codex=walkie-codex-gpu --dir /var/lib/walkie-worker
   walkie worker --agents claude --repo ~/src/project
   WALKIE_BLOB_TOKEN=s3cret walkie worker --agents codex --blobs http://home.internal:7434`,
		Flags: append(temporalFlags(),
			&cli.StringSliceFlag{Name: "agents", Usage: "configured agents this machine runs, comma separated (required)"},
			&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir): how each agent runs here"},
			&cli.StringFlag{Name: "dir", Usage: "where attempts' copies and transcripts are kept (default $XDG_STATE_HOME/walkie/worker)"},
			&cli.StringSliceFlag{Name: "repo", Usage: "a clone of a repository whose debates run in git worktrees (workspace: worktree); repeatable"},
			&cli.StringFlag{Name: "identity", Usage: "the worker's name in Temporal and the turn log (default walkie-worker@HOST:PID)"},
			&cli.DurationFlag{Name: "grace", Value: defaultWorkerGrace, Usage: "after SIGTERM, how long running turns may finish before they are interrupted"},
			logFormatFlag(),
			verboseFlag(),
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return withCode(exitBadInput, fmt.Errorf("worker takes no arguments (got %s)", c.Args().First()))
			}
			return runWith(c.Context, runF, workerRun, &workerOptions{IO: f.IO, Config: f.Config, Logger: f.Logger,
				Agents: c.StringSlice("agents"), ConfigPath: c.String("config"), Dir: c.String("dir"), Repos: c.StringSlice("repo"),
				Identity: c.String("identity"), Grace: c.Duration("grace"),
				LogFormat: c.String("log-format"), Verbose: c.Bool("verbose"), Temporal: temporalFlagValues(c)})
		},
	}
}

// workerOptions are walkie worker's.
type workerOptions struct {
	IO     *IOStreams
	Config func(path string) (*config.Config, error)
	Logger func(format string, verbose bool) (*zap.Logger, error)

	Agents     []string
	ConfigPath string
	Dir        string
	Repos      []string
	Identity   string
	Grace      time.Duration
	LogFormat  string
	Verbose    bool
	Temporal   temporalOptions
}

func workerRun(ctx context.Context, o *workerOptions) error {
	if err := handOffToTemporal("walkie worker"); err != nil {
		return err
	}
	return runTemporalWorker(ctx, o)
}

// runUntilSecondSignal runs fn until ctx ends, then waits for it to wind
// down; a second signal meanwhile exits at once.
func runUntilSecondSignal(ctx context.Context, fn func(context.Context) error, stderr io.Writer) error {
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	again := make(chan os.Signal, 1)
	signal.Notify(again, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(again)
	select {
	case err := <-done:
		return err
	case <-again:
		fmt.Fprintln(stderr, "walkie: second signal; exiting now (running turns go to another worker after the heartbeat timeout)")
		os.Exit(exitSignal)
		return nil
	}
}
