package scaleout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// markerVar, set with a value unique to the test in every process a test
// starts and passed on to the agents (env_allow), finds every process of
// the test in /proc, wherever it was reparented.
const markerVar = "WALKIE_TEST_RUN"

var runs atomic.Int64

// cluster is one test's home directory (the debate, the home's config)
// and the task queues of its home and workers, unique to the test so
// tests sharing the server never take each other's tasks.
type cluster struct {
	t      testing.TB
	dir    string
	name   string // the walkie file, in dir
	id     string
	marker string
	queues []string // --queue flags for the home and every worker
	home   string   // the home's task queue
	listen string   // the home's HTTP address
	// uncounted: the agents keep no run counter (a counter file shared by
	// many debates at once would be torn).
	uncounted bool
}

// agentScripts are the fake agents' scripts (YAML) by participant.
type agentScripts map[string]string

// newCluster makes the debate id between the participants of scripts
// (in sorted order), approved, with a home config that knows each agent.
func newCluster(t *testing.T, id string, maxRounds int, scripts agentScripts) *cluster {
	t.Helper()
	needServer(t)
	n := runs.Add(1)
	c := &cluster{t: t, dir: t.TempDir(), name: id + ".walkie.md", id: fmt.Sprintf("%s-%d-%d", id, os.Getpid(), n),
		marker: fmt.Sprintf("%d-%d-%s", os.Getpid(), n, t.Name())}
	c.name = c.id + ".walkie.md"
	participants := slices.Sorted(maps.Keys(scripts))
	for _, p := range participants {
		c.queues = append(c.queues, "--queue", fmt.Sprintf("%s=%s-%s", p, c.id, p))
	}
	c.home = c.id + "-home"
	c.listen = fmt.Sprintf("127.0.0.1:%d", freePorts(1)[0])
	c.writeConfig(filepath.Join(c.dir, "walkie.yaml"), c.dir, scripts, nil)
	c.write("briefing.md", "Should the test pass? One turn each.\n\n## What a sign-off means\nYou agree it passes.\n")
	c.mustRun(0, "init", c.name, "--agents", strings.Join(participants, ","), "--max-rounds", strconv.Itoa(maxRounds), "--briefing", "briefing.md")
	c.mustRun(0, "brief", "approve", c.name, "--yes")
	t.Cleanup(c.killLeftovers)
	return c
}

// writeConfig writes a config at path whose agents run the fake agent
// with scripts (kept in dir), and extra keys per agent.
func (c *cluster) writeConfig(path, dir string, scripts agentScripts, extra map[string]map[string]string) {
	c.t.Helper()
	var b strings.Builder
	// The fakes' scripts and counters are outside a worker's copy of the
	// record: their sandboxes open them.
	if err := os.MkdirAll(filepath.Join(dir, "fake"), 0o755); err != nil {
		c.t.Fatal(err)
	}
	var reads []string
	for _, p := range slices.Sorted(maps.Keys(scripts)) {
		reads = append(reads, fmt.Sprintf("%q", filepath.Join(dir, p+".yaml")))
	}
	b.WriteString("defaults:\n  timeout: 20s\n  stall: 5s\n  grace: 100ms\n  kill_grace: 500ms\n  retries: 1\n  home: inherit\n  env_allow: [" + markerVar + "]\n" +
		"  sandbox_read: [" + strings.Join(reads, ", ") + "]\n" + fmt.Sprintf("  sandbox_write: [%q]\n", filepath.Join(dir, "fake")) + "agents:\n")
	for _, p := range slices.Sorted(maps.Keys(scripts)) {
		script := filepath.Join(dir, p+".yaml")
		if err := os.WriteFile(script, []byte(scripts[p]+"\n"), 0o644); err != nil {
			c.t.Fatal(err)
		}
		state := ""
		if !c.uncounted {
			state = fmt.Sprintf(", --state, %q", filepath.Join(dir, "fake", p+".state"))
		}
		fmt.Fprintf(&b, "  %s:\n    command: [fakeagent, --file, \"{file}\", --agent, \"{agent}\", --script, %q%s]\n    usage: claude-json\n",
			p, script, state)
		for k, v := range extra[p] {
			fmt.Fprintf(&b, "    %s: %s\n", k, v)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) path(name string) string { return filepath.Join(c.dir, name) }

func (c *cluster) stateDir() string { return filepath.Join(c.dir, ".walkie", c.id) }

func (c *cluster) write(name, content string) {
	c.t.Helper()
	if err := os.WriteFile(c.path(name), []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// proc is a walkie process running in the background.
type proc struct {
	t       testing.TB
	cmd     *exec.Cmd
	mu      sync.Mutex
	out     bytes.Buffer // stdout and stderr
	done    chan struct{}
	code    int
	stopped bool
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start runs walkie in the cluster's directory; the test's end kills it.
func (c *cluster) start(args ...string) *proc {
	c.t.Helper()
	p := &proc{t: c.t, done: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(bin, "walkie"), args...)
	p.cmd.Dir = c.dir
	p.cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), markerVar+"="+c.marker,
		"GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	c.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if strings.Contains(p.output(), "DATA RACE") {
			c.t.Errorf("walkie %s: the race detector fired:\n%s", strings.Join(args, " "), p.output())
		}
		if c.t.Failed() {
			c.t.Logf("walkie %s:\n%s", strings.Join(args, " "), p.output())
		}
	})
	return p
}

// kill SIGKILLs the process and waits for it.
func (p *proc) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatal(err)
	}
	<-p.done
}

// startHome starts walkie serve --engine temporal on the directory.
func (c *cluster) startHome() *proc {
	c.t.Helper()
	return c.start(append([]string{"serve", "--engine", "temporal", "--temporal", server, "--dir", ".", "--listen", c.listen,
		"--home-queue", c.home, "--grace", "2s", "--log-format", "json"}, c.queues...)...)
}

// startWorker starts a walkie worker for agents, with its own directory
// and its own config (the agents' scripts kept there), and more flags.
func (c *cluster) startWorker(name string, scripts agentScripts, extra map[string]map[string]string, more ...string) (*proc, string) {
	c.t.Helper()
	dir := filepath.Join(c.t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	cfg := filepath.Join(dir, "walkie.yaml")
	c.writeConfig(cfg, dir, scripts, extra)
	agents := strings.Join(slices.Sorted(maps.Keys(scripts)), ",")
	args := append([]string{"worker", "--temporal", server, "--agents", agents, "--config", cfg, "--dir", filepath.Join(dir, "attempts"),
		"--identity", name, "--grace", "2s", "--log-format", "json"}, append(c.queues, more...)...)
	p := c.start(args...)
	c.waitPolling(p, strings.Count(agents, ",")+1)
	return p, dir
}

// waitPolling waits until the worker polls its n queues.
func (c *cluster) waitPolling(p *proc, n int) {
	c.t.Helper()
	sessiontest.WaitFor(c.t, 20*time.Second, "the worker polling", func() bool {
		return strings.Count(p.output(), `"polling"`) >= n
	})
}

// result is a finished walkie command.
type result struct {
	code           int
	stdout, stderr string
}

func (c *cluster) run(args ...string) result {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(bin, "walkie"), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		c.t.Fatal(err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

func (c *cluster) mustRun(code int, args ...string) result {
	c.t.Helper()
	r := c.run(args...)
	if r.code != code {
		c.t.Fatalf("walkie %s: exit %d, want %d\n%s%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// status is the debate's status as walkie status --json reports it.
func (c *cluster) status() string {
	c.t.Helper()
	var s struct {
		Status string `json:"status"`
	}
	r := c.mustRun(0, "status", c.name, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		c.t.Fatalf("walkie status --json: %v\n%s", err, r.stdout)
	}
	return s.Status
}

func (c *cluster) waitStatus(status string, limit time.Duration) {
	c.t.Helper()
	sessiontest.WaitFor(c.t, limit, "status "+status, func() bool { return c.status() == status })
}

func (c *cluster) turns() []controller.TurnRecord {
	c.t.Helper()
	recs, err := controller.ReadTurnLog(c.stateDir())
	if err != nil {
		c.t.Fatal(err)
	}
	return recs
}

func (c *cluster) state() *walkie.State {
	c.t.Helper()
	st, err := walkie.LoadState(c.stateDir())
	if err != nil {
		c.t.Fatal(err)
	}
	return st
}

// waitRunning waits until turn is out on a worker and its fake agent has
// been started n times in all (the agent counts its runs in its state
// file, in the worker's directory).
func (c *cluster) waitRunning(turn int, stateFile string, n int) {
	c.t.Helper()
	sessiontest.WaitFor(c.t, 20*time.Second, fmt.Sprintf("turn %d running on a worker", turn), func() bool {
		st := c.state()
		b, _ := os.ReadFile(stateFile)
		k, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return st.Running != nil && st.Running.Turn == turn && k >= n
	})
}

// verify checks the record's chain and that it holds turns turns.
func (c *cluster) verify(turns int) *walkie.Doc {
	c.t.Helper()
	c.mustRun(0, "verify", c.name)
	d, err := walkie.Load(c.path(c.name))
	if err != nil {
		c.t.Fatal(err)
	}
	if got := d.Progress().Turns; got != turns {
		c.t.Fatalf("the record holds %d turns, want %d", got, turns)
	}
	return d
}

// onceEach fails unless every turn of the record is logged accepted
// exactly once, and no attempt is logged twice.
func (c *cluster) onceEach(recs []controller.TurnRecord, turns int) {
	c.t.Helper()
	accepted := map[int]int{}
	seen := map[string]bool{}
	for _, r := range recs {
		key := fmt.Sprintf("%d/%d", r.Turn, r.Attempt)
		if seen[key] {
			c.t.Fatalf("attempt %s logged twice:\n%s", key, dump(recs))
		}
		seen[key] = true
		if r.Outcome == walkie.OutcomeAccepted {
			accepted[r.Turn]++
		}
	}
	for n := 1; n <= turns; n++ {
		if accepted[n] != 1 {
			c.t.Fatalf("turn %d accepted %d times, want once:\n%s", n, accepted[n], dump(recs))
		}
	}
}

func dump(recs []controller.TurnRecord) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  turn %d %s attempt %d: %s (%s) worker=%s\n", r.Turn, r.Agent, r.Attempt, r.Outcome, r.Detail, r.Worker)
	}
	return b.String()
}

// fleet is the debate as the home's fleet page API shows it; nil while
// the home is not answering yet or does not list it.
func (c *cluster) fleet() map[string]any {
	c.t.Helper()
	resp, err := http.Get("http://" + c.listen + "/api/debates")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var v struct {
		Debates []map[string]any `json:"debates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		c.t.Fatal(err)
	}
	for _, d := range v.Debates {
		if d["id"] == c.id {
			return d
		}
	}
	return nil
}

// history is the debate's workflow history, every run of it.
func (c *cluster) history() []*historypb.HistoryEvent {
	c.t.Helper()
	tc, err := client.Dial(client.Options{HostPort: server, Logger: quiet{}})
	if err != nil {
		c.t.Fatal(err)
	}
	defer tc.Close()
	it := tc.GetWorkflowHistory(context.Background(), c.id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			c.t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// turnStarts lists the turn activities' starts over the history, each
// with the delivery that ran last (a history keeps only the last
// attempt's start).
func turnStarts(events []*historypb.HistoryEvent) (starts []int32) {
	turns := map[int64]bool{}
	for _, e := range events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "walkie.Turn" {
			turns[e.GetEventId()] = true
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && turns[a.GetScheduledEventId()] {
			starts = append(starts, a.GetAttempt())
		}
	}
	return starts
}

// processes lists the live processes of the test (the marker in their
// environment), but the walkie processes themselves.
func (c *cluster) agents() []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	want := []byte(markerVar + "=" + c.marker + "\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(env, want) && bytes.Contains(cmdline, []byte("fakeagent")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (c *cluster) killLeftovers() {
	for _, pid := range c.agents() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
