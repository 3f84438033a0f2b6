// Package scaleout drives walkie's Temporal engine end to end: a real
// Temporal server (the CLI's dev server, built once by
// scripts/install-temporal.sh into .cache/), the built walkie binary as
// the home (walkie serve --engine temporal) and as workers (walkie
// worker), and the scripted fake agent. Each test kills, halts or starves
// something and then checks what a user can see: the record, the log,
// walkie status, the fleet page, the workflow's history.
//
// Without the server binary the tests skip and say how to build it; with
// CI set they fail instead.
package scaleout

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

var (
	// bin holds walkie, walkie-temporal and fakeagent, built for this run.
	bin string
	// server is the dev server's frontend address; "" when it is missing.
	server  string
	missing string // why there is no server
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// walkie as it is installed: the default build, which hands serve
	// --engine temporal and worker to walkie-temporal beside it, so every
	// test here runs through the hand-off.
	dir, err := blackbox.BuildTemp("walkie-scaleout-", blackbox.Walkie, blackbox.WalkieTemporal, blackbox.FakeAgent)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = dir
	stop, err := startServer(dir)
	if err != nil {
		missing = err.Error()
	} else {
		defer stop()
	}
	return m.Run()
}

// startServer starts the dev server on free ports, in memory, and waits
// until its frontend answers.
func startServer(dir string) (stop func(), err error) {
	path := os.Getenv("WALKIE_TEMPORAL")
	if path == "" {
		out, err := exec.Command("../../../scripts/install-temporal.sh", "--check").Output()
		if err != nil {
			return nil, fmt.Errorf("the Temporal dev server is not built: run scripts/install-temporal.sh (make test does), or set WALKIE_TEMPORAL to a temporal binary")
		}
		path = strings.TrimSpace(string(out))
	}
	ports := freePorts(3)
	server = fmt.Sprintf("127.0.0.1:%d", ports[0])
	cmd := exec.Command(path, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", fmt.Sprint(ports[0]),
		"--http-port", fmt.Sprint(ports[1]), "--metrics-port", fmt.Sprint(ports[2]), "--log-level", "error")
	log, err := os.Create(filepath.Join(dir, "temporal.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := client.DialContext(ctx, client.Options{HostPort: server, Logger: quiet{}})
		cancel()
		if err == nil {
			c.Close()
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			b, _ := os.ReadFile(log.Name())
			return nil, fmt.Errorf("the dev server did not answer on %s within a minute: %v\n%s", server, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// needServer skips the test without a server, or fails it under CI.
func needServer(t testing.TB) {
	t.Helper()
	blackbox.ReadSources(t)
	if missing != "" {
		sessiontest.Need(t, errors.New(missing))
	}
}

func freePorts(n int) []int {
	var out []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

// quiet drops the SDK's log lines in the test process.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
