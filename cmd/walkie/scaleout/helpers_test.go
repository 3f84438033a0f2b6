package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// runs numbers the tests' debates, whose ids the Temporal server shares.
var runs atomic.Int64

// cluster is one test's home directory (the debate, the home's config)
// and the task queues of its home and workers, unique to the test so
// tests sharing the server never take each other's tasks.
type cluster struct {
	blackbox.Runner        // walkie in the home directory
	name            string // the walkie file, in the home directory
	id              string
	marker          blackbox.Marker
	queues          []string // --queue flags for the home and every worker
	home            string   // the home's task queue
	listen          string   // the home's HTTP address
	// uncounted: the agents keep no run counter (a counter file shared by
	// many debates at once would be torn).
	uncounted bool
	// blobs is the home's blob store, which the workers share (one
	// machine); blobFlags replace it on a worker (the home's URL).
	blobs     string
	blobFlags []string
	// sub is the record's directory under the home's, "" for the home's.
	sub string
}

// agentScripts are the fake agents' scripts (YAML) by participant.
type agentScripts map[string]string

// newCluster makes the debate id between the participants of scripts
// (in sorted order), approved, with a home config that knows each agent.
func newCluster(t *testing.T, id string, maxRounds int, scripts agentScripts) *cluster {
	t.Helper()
	return newClusterWith(t, id, maxRounds, scripts, "")
}

// newClusterWith is newCluster with more front matter (YAML lines), set
// before the briefing is approved.
func newClusterWith(t *testing.T, id string, maxRounds int, scripts agentScripts, meta string) *cluster {
	t.Helper()
	needServer(t)
	n := runs.Add(1)
	c := &cluster{name: id + ".walkie.md", id: fmt.Sprintf("%s-%d-%d", id, os.Getpid(), n), marker: blackbox.NewMarker(t)}
	c.Runner = walkieIn(t, t.TempDir(), c.marker)
	c.blobs = filepath.Join(t.TempDir(), "blobs")
	c.name = c.id + ".walkie.md"
	participants := slices.Sorted(maps.Keys(scripts))
	for _, p := range participants {
		c.queues = append(c.queues, "--queue", fmt.Sprintf("%s=%s-%s", p, c.id, p))
	}
	c.home = c.id + "-home"
	c.listen = anyPort
	c.writeConfig(filepath.Join(c.Dir, "walkie.yaml"), c.Dir, scripts, nil)
	c.write("briefing.md", "Should the test pass? One turn each.\n\n## What a sign-off means\nYou agree it passes.\n")
	c.MustRun(0, "init", c.name, "--agents", strings.Join(participants, ","), "--max-rounds", strconv.Itoa(maxRounds), "--briefing", "briefing.md")
	if meta != "" {
		b, err := os.ReadFile(c.path(c.name))
		if err != nil {
			t.Fatal(err)
		}
		c.write(c.name, strings.Replace(string(b), "\n---\n", "\n"+meta+"---\n", 1))
	}
	c.MustRun(0, "brief", "approve", c.name, "--yes")
	t.Cleanup(c.marker.Kill)
	return c
}

// writeConfig writes a config at path whose agents run the fake agent
// with scripts (kept in dir), and extra keys per agent.
func (c *cluster) writeConfig(path, dir string, scripts agentScripts, extra map[string]map[string]string) {
	c.T.Helper()
	cfg := blackbox.Config{Defaults: blackbox.FakeDefaults(dir)}
	cfg.Defaults["stall"] = "5s"
	for _, p := range slices.Sorted(maps.Keys(scripts)) {
		a := blackbox.ScriptedAgent(c.T, dir, p, scripts[p], extra[p])
		if c.uncounted {
			a.Keys["command"] = blackbox.FakeAgentCommand(filepath.Join(dir, p+".yaml"), "")
		}
		cfg.Agents = append(cfg.Agents, a)
	}
	cfg.Write(c.T, path)
}

func (c *cluster) path(name string) string { return filepath.Join(c.Dir, name) }

func (c *cluster) stateDir() string { return filepath.Join(c.Dir, c.sub, ".walkie", c.id) }

func (c *cluster) write(name, content string) {
	c.T.Helper()
	if err := os.WriteFile(c.path(name), []byte(content), 0o644); err != nil {
		c.T.Fatal(err)
	}
}

// walkieIn runs walkie in dir with the test's environment, the built
// binaries first on PATH, and the test's marker. What it starts (the home,
// the workers) the test's end kills.
func walkieIn(t testing.TB, dir string, m blackbox.Marker) blackbox.Runner {
	// A state directory of the test's own: the registry of debates and a
	// default blob store must not be the user's.
	env := append(os.Environ(), append(blackbox.Env(bin, m), "XDG_STATE_HOME="+t.TempDir())...)
	return blackbox.Runner{T: t, Bin: filepath.Join(bin, "walkie"), Dir: dir, Env: env, Limit: time.Minute}
}

// startHome starts walkie serve --engine temporal on the directory, with
// more flags. With c.listen set it binds a port of its own choosing and
// c.listen becomes the address it serves on: a port picked free by the
// test and bound later may be taken in between (by the dev server's own
// ports).
func (c *cluster) startHome(more ...string) *blackbox.Proc {
	c.T.Helper()
	listen := c.listen
	if listen != "" {
		listen = anyPort
	}
	args := append([]string{"serve", "--engine", "temporal", "--temporal", server, "--dir", ".", "--listen", listen,
		"--home-queue", c.home, "--grace", "2s", "--log-format", "json", "--blobs", c.blobs}, c.queues...)
	p := c.Start(append(args, more...)...)
	if listen != "" {
		c.listen = c.saidAddr(p, "serving", "http")
	}
	return p
}

// saidAddr waits for p's JSON log line msg and returns the address its
// key names.
func (c *cluster) saidAddr(p *blackbox.Proc, msg, key string) string {
	c.T.Helper()
	if err := p.WaitSaid(`"msg":"`+msg+`"`, 1, time.Minute); err != nil {
		c.T.Fatal(err)
	}
	re := regexp.MustCompile(`"msg":"` + regexp.QuoteMeta(msg) + `".*?"` + regexp.QuoteMeta(key) + `":"([^"]+)"`)
	m := re.FindStringSubmatch(p.Stderr())
	if m == nil {
		c.T.Fatalf("the home said %q, but on no address:\n%s", msg, p.Stderr())
	}
	return m[1]
}

// anyPort asks the home to bind a free port itself.
const anyPort = "127.0.0.1:0"

// startWorker starts a walkie worker for agents, with its own directory
// and its own config (the agents' scripts kept there), and more flags.
func (c *cluster) startWorker(name string, scripts agentScripts, extra map[string]map[string]string, more ...string) (*blackbox.Proc, string) {
	c.T.Helper()
	return c.worker(workerSpec{name: name, scripts: scripts, extra: extra, more: more})
}

// workerSpec is a worker to start: its name, agents' scripts and keys,
// its directory (a fresh one when ""), its environment's additions, and
// more flags.
type workerSpec struct {
	name    string
	scripts agentScripts
	extra   map[string]map[string]string
	dir     string
	env     []string
	more    []string
}

func (c *cluster) worker(s workerSpec) (*blackbox.Proc, string) {
	c.T.Helper()
	dir := s.dir
	if dir == "" {
		dir = filepath.Join(c.T.TempDir(), s.name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.T.Fatal(err)
	}
	cfg := filepath.Join(dir, "walkie.yaml")
	c.writeConfig(cfg, dir, s.scripts, s.extra)
	agents := strings.Join(slices.Sorted(maps.Keys(s.scripts)), ",")
	blobs := []string{"--blobs", c.blobs}
	if c.blobFlags != nil {
		blobs = c.blobFlags
	}
	args := append([]string{"worker", "--temporal", server, "--agents", agents, "--config", cfg, "--dir", filepath.Join(dir, "attempts"),
		"--identity", s.name, "--grace", "2s", "--log-format", "json"}, blobs...)
	args = append(args, append(c.queues, s.more...)...)
	r := c.Runner
	r.Env = append(slices.Clone(r.Env), s.env...)
	p := r.Start(args...)
	c.waitPolling(p, strings.Count(agents, ",")+1)
	return p, dir
}

// waitPolling waits until the worker polls its n queues.
func (c *cluster) waitPolling(p *blackbox.Proc, n int) {
	c.T.Helper()
	sessiontest.WaitFor(c.T, 20*time.Second, "the worker polling", func() bool {
		return strings.Count(p.Output(), `"polling"`) >= n
	})
}

// status is the debate's status as walkie status --json reports it.
func (c *cluster) status() string {
	c.T.Helper()
	return blackbox.Status(c.T, c.MustRun(0, "status", c.name, "--json"))
}

// waitStatus waits until walkie status says status and no attempt runs.
// The home stamps a turn into the record (which status reads) a moment
// before it logs the attempt's end, which clears the running attempt: a
// test that reads the attempts at the status alone can miss the last one.
func (c *cluster) waitStatus(status string, limit time.Duration) {
	c.T.Helper()
	sessiontest.WaitFor(c.T, limit, "status "+status+", nothing running", func() bool {
		return c.status() == status && c.state().Running == nil
	})
}

func (c *cluster) turns() []blackbox.Turn {
	c.T.Helper()
	return blackbox.ReadTurns(c.T, c.stateDir())
}

func (c *cluster) state() *walkie.State {
	c.T.Helper()
	return blackbox.State(c.T, c.stateDir())
}

// waitRunning waits until turn is out on a worker and its fake agent has
// been started n times in all (the agent counts its runs in its state
// file, in the worker's directory).
func (c *cluster) waitRunning(turn int, stateFile string, n int) {
	c.T.Helper()
	sessiontest.WaitFor(c.T, 20*time.Second, fmt.Sprintf("turn %d running on a worker", turn), func() bool {
		st := c.state()
		return st.Running != nil && st.Running.Turn == turn && blackbox.Invocations(stateFile) >= n
	})
}

// verify checks the record's chain and that it holds turns turns.
func (c *cluster) verify(turns int) *walkie.Doc {
	c.T.Helper()
	c.MustRun(0, "verify", c.name)
	return blackbox.Holds(c.T, c.path(c.name), turns)
}

// onceEach fails unless every turn of the record is logged accepted
// exactly once, and no attempt is logged twice.
func (c *cluster) onceEach(recs []blackbox.Turn, turns int) {
	c.T.Helper()
	accepted := map[int]int{}
	seen := map[string]bool{}
	for _, r := range recs {
		key := fmt.Sprintf("%d/%d", r.Turn, r.Attempt)
		if seen[key] {
			c.T.Fatalf("attempt %s logged twice:\n%s", key, blackbox.Dump(recs))
		}
		seen[key] = true
		if r.Outcome == string(walkie.OutcomeAccepted) {
			accepted[r.Turn]++
		}
	}
	for n := 1; n <= turns; n++ {
		if accepted[n] != 1 {
			c.T.Fatalf("turn %d accepted %d times, want once:\n%s", n, accepted[n], blackbox.Dump(recs))
		}
	}
}

// fleet is the debate as the home's fleet page API shows it; nil while
// the home is not answering yet or does not list it.
func (c *cluster) fleet() map[string]any {
	c.T.Helper()
	resp, err := http.Get("http://" + c.listen + "/api/debates")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var v struct {
		Debates []map[string]any `json:"debates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		c.T.Fatal(err)
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
	c.T.Helper()
	tc, err := client.Dial(client.Options{HostPort: server, Logger: quiet{}})
	if err != nil {
		c.T.Fatal(err)
	}
	defer tc.Close()
	it := tc.GetWorkflowHistory(context.Background(), c.id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			c.T.Fatal(err)
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
