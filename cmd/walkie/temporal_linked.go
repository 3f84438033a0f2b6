//go:build temporal

package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/temporal"
	"github.com/walkie-sh/walkie/controller/temporal/blob"
)

// The temporal build (-tags temporal, installed as walkie-temporal): the
// engine is linked in and runs here (handoff.go).

// The worker's --grace default is written in worker.go, which the default
// build compiles without controller/temporal; this stops the build when the
// two drift apart (a negative constant does not convert to uint).
const _ = uint(defaultWorkerGrace-temporal.DefaultWorkerGrace) + uint(temporal.DefaultWorkerGrace-defaultWorkerGrace)

// temporalLinked says whether this build links the engine.
const temporalLinked = true

// handOffToTemporal has nothing to do: this build runs the engine itself.
func handOffToTemporal(*cli.Context) error { return nil }

// acceptHandoff refuses a hand-off from a walkie of another version: its
// flags, record format or protocol may not be this build's.
func acceptHandoff(from string) error {
	if own := handoffVersion(); from != own {
		self, _ := os.Executable()
		return withCode(exitBadInput, fmt.Errorf("walkie %s handed a Temporal command to %s, which is walkie %s: install the two from one version; %s", from, self, own, installHint()))
	}
	return nil
}

// temporalConnection is what the temporal flags say.
func temporalConnection(c *cli.Context) temporal.Connection {
	return temporal.Connection{HostPort: c.String("temporal"), Namespace: c.String("namespace"), TLS: c.Bool("tls"), CA: c.String("tls-ca"),
		Cert: c.String("tls-cert"), Key: c.String("tls-key"), APIKey: c.String("api-key")}
}

// runTemporalWorker runs walkie worker (runWorker checked its arguments).
func runTemporalWorker(c *cli.Context) error {
	stderr := c.App.ErrWriter
	log, cfg, err := commandLoggerAndConfig(c)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	queues, err := temporal.ParseQueues(c.StringSlice("queue"))
	if err != nil {
		return withCode(exitBadInput, err)
	}
	agents := temporal.ParseAgents(c.StringSlice("agents"))
	if err := temporal.CheckAgents(cfg, agents); err != nil {
		return withCode(exitBadInput, err)
	}
	blobs, err := blob.Open(cmp.Or(c.String("blobs"), temporal.DefaultBlobDir()), c.String("blob-token"))
	if err != nil {
		return withCode(exitBadInput, err)
	}
	ctx, cancel := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	client, err := temporal.Dial(ctx, temporalConnection(c), log)
	if err != nil {
		return err
	}
	defer client.Close()
	dir := c.String("dir")
	if dir == "" {
		dir = temporal.DefaultWorkerDir()
	}
	w, err := temporal.NewWorker(temporal.WorkerOptions{Client: client, Agents: agents, Queues: queues,
		Config: cfg, Dir: dir, Repos: c.StringSlice("repo"), Identity: c.String("identity"), Grace: c.Duration("grace"),
		Blobs: blobs, Version: handoffVersion(), Log: log})
	if err != nil {
		return withCode(exitBadInput, err)
	}
	log.Info("worker started", zap.String("identity", w.Identity()), zap.String("dir", dir), zap.String("temporal", c.String("temporal")))
	return runUntilSecondSignal(ctx, func(ctx context.Context) error { return w.Run(ctx) }, stderr)
}

// newHome connects the daemon to Temporal as the home of --dir's debates.
func newHome(c *cli.Context, cfg *config.Config, log *zap.Logger) (remoteHome, error) {
	queues, err := temporal.ParseQueues(c.StringSlice("queue"))
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	blobs, err := blob.OpenDir(cmp.Or(c.String("blobs"), temporal.DefaultBlobDir()))
	if err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("--blobs: %w", err))
	}
	if err := temporal.CheckBlobListen(c.String("blob-listen"), c.String("blob-token")); err != nil {
		return nil, withCode(exitBadInput, err)
	}
	client, err := temporal.Dial(c.Context, temporalConnection(c), log)
	if err != nil {
		return nil, err
	}
	queue := c.String("home-queue")
	if queue == "" {
		queue = temporal.DefaultHomeQueue(c.String("dir"))
	}
	home, err := temporal.NewHome(temporal.HomeOptions{Client: client, Queue: queue, Queues: queues, Config: cfg, Blobs: blobs,
		BlobListen: c.String("blob-listen"), BlobToken: c.String("blob-token"), Version: handoffVersion(), Log: log})
	if err != nil {
		return nil, err
	}
	return home, nil
}
