//go:build temporal

package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

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
func handOffToTemporal(string) error { return nil }

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
func temporalConnection(o temporalOptions) temporal.Connection {
	return temporal.Connection{HostPort: o.HostPort, Namespace: o.Namespace, TLS: o.TLS, CA: o.CA,
		Cert: o.Cert, Key: o.Key, APIKey: o.APIKey}
}

// runTemporalWorker runs walkie worker (its urfave part checked its
// arguments).
func runTemporalWorker(ctx context.Context, o *workerOptions) error {
	stderr := o.IO.ErrOut
	log, cfg, err := loggerAndConfig(o.Logger, o.Config, o.LogFormat, o.Verbose, o.ConfigPath)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	queues, err := temporal.ParseQueues(o.Temporal.Queues)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	agents := temporal.ParseAgents(o.Agents)
	if err := temporal.CheckAgents(cfg, agents); err != nil {
		return withCode(exitBadInput, err)
	}
	blobs, err := blob.Open(cmp.Or(o.Temporal.Blobs, temporal.DefaultBlobDir()), o.Temporal.BlobToken)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	ctx, cancel := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	client, err := temporal.Dial(ctx, temporalConnection(o.Temporal), log)
	if err != nil {
		return err
	}
	defer client.Close()
	dir := o.Dir
	if dir == "" {
		dir = temporal.DefaultWorkerDir()
	}
	w, err := temporal.NewWorker(temporal.WorkerOptions{Client: client, Agents: agents, Queues: queues,
		Config: cfg, Dir: dir, Repos: o.Repos, Identity: o.Identity, Grace: o.Grace,
		Blobs: blobs, Version: handoffVersion(), Log: log})
	if err != nil {
		return withCode(exitBadInput, err)
	}
	log.Info("worker started", zap.String("identity", w.Identity()), zap.String("dir", dir), zap.String("temporal", o.Temporal.HostPort))
	return runUntilSecondSignal(ctx, func(ctx context.Context) error { return w.Run(ctx) }, stderr)
}

// newHome connects the daemon to Temporal as the home of --dir's debates.
func newHome(ctx context.Context, o *serveOptions, cfg *config.Config, log *zap.Logger) (remoteHome, error) {
	queues, err := temporal.ParseQueues(o.Temporal.Queues)
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	blobs, err := blob.OpenDir(cmp.Or(o.Temporal.Blobs, temporal.DefaultBlobDir()))
	if err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("--blobs: %w", err))
	}
	if err := temporal.CheckBlobListen(o.BlobListen, o.Temporal.BlobToken); err != nil {
		return nil, withCode(exitBadInput, err)
	}
	client, err := temporal.Dial(ctx, temporalConnection(o.Temporal), log)
	if err != nil {
		return nil, err
	}
	queue := o.HomeQueue
	if queue == "" {
		queue = temporal.DefaultHomeQueue(o.Dir)
	}
	home, err := temporal.NewHome(temporal.HomeOptions{Client: client, Queue: queue, Queues: queues, Config: cfg, Blobs: blobs,
		BlobListen: o.BlobListen, BlobToken: o.Temporal.BlobToken, Version: handoffVersion(), Log: log})
	if err != nil {
		return nil, err
	}
	return home, nil
}
