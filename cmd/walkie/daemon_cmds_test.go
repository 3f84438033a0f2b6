package main

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestDaemonCommandsParse(t *testing.T) {
	s := parse(t, serveCommand, "--dir", "debates", "--listen", "", "--grace", "5m", "--allowed-host", "walkie.example.com", "--engine", "temporal",
		"--temporal", "t.internal:7233", "--queue", "codex=gpu", "--tls")
	if s.Dir != "debates" || s.Listen != "" || s.Grace != 5*time.Minute || !reflect.DeepEqual(s.AllowedHosts, []string{"walkie.example.com"}) || s.Engine != "temporal" ||
		s.Temporal.HostPort != "t.internal:7233" || !reflect.DeepEqual(s.Temporal.Queues, []string{"codex=gpu"}) || !s.Temporal.TLS || s.Temporal.Namespace != "default" {
		t.Errorf("serve options %+v", s)
	}
	w := parse(t, watchCommand, "reviews", "--once", "--retry-after", "10m", "--json", "--no-notify")
	if w.Path != "reviews" || w.RetryAfter != 10*time.Minute || !w.JSON || !w.Notify.Off {
		t.Errorf("watch options %+v", w)
	}
	k := parse(t, workerCommand, "--agents", "claude,codex", "--repo", "a", "--repo", "b", "--identity", "w1")
	if !reflect.DeepEqual(k.Agents, []string{"claude", "codex"}) || !reflect.DeepEqual(k.Repos, []string{"a", "b"}) || k.Identity != "w1" || k.Grace != defaultWorkerGrace {
		t.Errorf("worker options %+v", k)
	}
}

// One cron tick over a debate whose parties walkie does not run: it waits
// for the post, and says so.
func TestDaemonCommandsRun(t *testing.T) {
	ctx := context.Background()
	file := mustInit(t, filepath.Join(t.TempDir(), "d.walkie.md"))
	f := fakeFactory("")
	out, _, code := f.run(t, func() error {
		return watchRun(ctx, &watchOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry, Ledger: f.Ledger, Path: file, LogFormat: "json", Notify: notifyOptions{Off: true}})
	})
	if code != 0 || !strings.HasPrefix(out, file+": waiting: ") || strings.Count(out, "\n") != 1 {
		t.Errorf("watch: exit %d, %q", code, out)
	}
	_, _, code = f.run(t, func() error {
		return serveRun(ctx, &serveOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry, Ledger: f.Ledger, Engine: "docker"})
	})
	if code != exitBadInput {
		t.Errorf("serve --engine docker: exit %d, want %d", code, exitBadInput)
	}
	// A daemon told to stop before it began: it takes the directory,
	// says so in its log, and ends without error.
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	logTo := func(format string, verbose bool) (*zap.Logger, error) {
		return newLogger(f.err, format, verbose, false)
	}
	_, errOut, code := f.run(t, func() error {
		return serveRun(stopped, &serveOptions{IO: f.IO, Config: f.Config, Logger: logTo, Registry: f.Registry, Ledger: f.Ledger, Engine: "local", Dir: filepath.Dir(file), LogFormat: "json"})
	})
	for _, want := range []string{`"msg":"serving","dir":"` + filepath.Dir(file) + `","debates":1,"http":""`, `"msg":"stopped"`} {
		if code != 0 || !strings.Contains(errOut, want) {
			t.Errorf("serve: exit %d, its log lacks %s:\n%s", code, want, errOut)
		}
	}
}
