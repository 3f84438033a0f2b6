package scaleout

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/controller/temporal"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// The fast scripted agents of a debate that converges in three turns:
// bob signs at once, alice from round 2.
var converging = agentScripts{
	"alice": `body: "I think it passes."` + "\nsign_from: 2",
	"bob":   `body: "Agreed."` + "\nsign_from: 1",
}

// Two agents served by two worker processes, each polling only its own
// agent's task queue: the debate converges, every turn is recorded once
// with the worker that ran it, the transcripts are at home, and walkie
// status, walkie log and the fleet page read it as a local one. The
// workflow's history replays against the workflow code.
func TestDebateOnTwoWorkersConverges(t *testing.T) {
	c := newCluster(t, "converge", 3, converging)
	_, aliceDir := c.startWorker("w-alice", agentScripts{"alice": converging["alice"]}, nil)
	_, bobDir := c.startWorker("w-bob", agentScripts{"bob": converging["bob"]}, nil)
	c.startHome()
	c.waitStatus(walkie.StatusConverged, 60*time.Second)
	c.verify(3)
	recs := c.turns()
	c.onceEach(recs, 3)
	for _, r := range recs {
		if want := "w-" + r.Agent; r.Worker != want {
			t.Errorf("turn %d (%s) ran on %q, want %q", r.Turn, r.Agent, r.Worker, want)
		}
		if fi, err := os.Stat(filepath.Join(c.stateDir(), r.Transcript.Text)); err != nil || r.Transcript.Text == "" {
			t.Errorf("turn %d: no transcript at home: %v", r.Turn, err)
		} else if fi.Size() == 0 && r.Bytes > 0 {
			t.Errorf("turn %d: the transcript at home is empty", r.Turn)
		}
	}
	// Each worker ran only its own agent: its agent's run counter says so.
	for dir, want := range map[string]string{aliceDir: "2", bobDir: "1"} {
		if b, err := os.ReadFile(filepath.Join(dir, "fake", strings.TrimPrefix(filepath.Base(dir), "w-")+".state")); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s ran its agent %q times (%v), want %s", dir, b, err, want)
		}
	}
	log := c.MustRun(0, "log", c.name, "--json").Stdout
	if strings.Count(log, `"worker":"w-alice"`) != 2 || strings.Count(log, `"worker":"w-bob"`) != 1 {
		t.Errorf("walkie log --json does not name the workers:\n%s", log)
	}
	sessiontest.WaitFor(t, 10*time.Second, "the fleet page showing the debate converged", func() bool {
		return c.fleet()["status"] == walkie.StatusConverged
	})
	events := c.history()
	if got := turnStarts(events); !slices.Equal(got, []int32{1, 1, 1}) {
		t.Errorf("turn activity starts %v, want three first deliveries", got)
	}
	replay(t, events, "converge")
}

// replay replays a history from a real run against the workflow code, and
// with WALKIE_RECORD_HISTORY set, writes it as one the unit tests replay
// (controller/temporal/testdata/NAME.history.json).
func replay(t *testing.T, events []*historypb.HistoryEvent, name string) {
	t.Helper()
	b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "history.json")
	if os.Getenv("WALKIE_RECORD_HISTORY") != "" {
		path = "../../../controller/temporal/testdata/" + name + ".history.json"
		b = scrubPaths(t, b)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(temporal.Debate, workflow.RegisterOptions{Name: temporal.WorkflowName})
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, path); err != nil {
		t.Fatalf("the history of a real run does not replay: %v", err)
	}
}

// scrubPaths replaces this machine's temporary directories in the
// history's payloads (the record's path, the workers' transcript paths)
// with a neutral one, so the committed history names no path of the
// machine it was recorded on.
func scrubPaths(t *testing.T, history []byte) []byte {
	t.Helper()
	tmp := regexp.MustCompile(regexp.QuoteMeta(os.TempDir()) + `/[A-Za-z0-9_.-]+`)
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if data, ok := x["data"].(string); ok && x["metadata"] != nil {
				if raw, err := base64.StdEncoding.DecodeString(data); err == nil {
					x["data"] = base64.StdEncoding.EncodeToString(tmp.ReplaceAll(raw, []byte("/home/walkie")))
				}
			}
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	var v any
	if err := json.Unmarshal(history, &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(walk(v), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A worker SIGKILLed in the middle of a turn stops heartbeating; after
// the heartbeat timeout the turn is given to the other worker on the same
// queue, and the record holds it exactly once.
func TestKilledWorkersTurnIsRetriedOnTheOther(t *testing.T) {
	c := newCluster(t, "killworker", 3, converging)
	hanging := agentScripts{"alice": "behavior: hang", "bob": converging["bob"]}
	first, firstDir := c.startWorker("w-first", hanging, nil)
	c.startHome()
	c.waitRunning(1, filepath.Join(firstDir, "fake", "alice.state"), 1)
	c.startWorker("w-second", converging, nil)
	killed := time.Now()
	first.Kill()
	c.waitStatus(walkie.StatusConverged, 60*time.Second)
	c.verify(3)
	recs := c.turns()
	c.onceEach(recs, 3)
	if len(recs) != 3 || recs[0].Worker != "w-second" {
		t.Fatalf("turn 1 should be one attempt, run by w-second:\n%s", blackbox.Dump(recs))
	}
	// Noticed within the heartbeat timeout (the agents' 5s stall window)
	// plus the retry's backoff, not the turn's 20s timeout.
	if took := recs[0].EndedAt().Sub(killed); took > 15*time.Second {
		t.Fatalf("the turn was retried %s after the worker died, want within the heartbeat timeout", took)
	}
	// A history keeps only the last delivery's start, with its attempt.
	if got := turnStarts(c.history()); !slices.Equal(got, []int32{2, 1, 1}) {
		t.Fatalf("turn activity starts %v, want turn 1 delivered twice (the second after the kill)", got)
	}
}

// The home SIGKILLed while a turn runs remotely, then started again: the
// turn finishes on its worker meanwhile and is settled by the new home;
// nothing is lost or recorded twice.
func TestKilledHomeRestartsWithNothingLostOrRepeated(t *testing.T) {
	slow := agentScripts{
		"alice": converging["alice"] + "\ndelay: 1500ms",
		"bob":   converging["bob"] + "\ndelay: 1500ms",
	}
	c := newCluster(t, "killhome", 3, slow)
	w, dir := c.startWorker("w", slow, nil)
	home := c.startHome()
	c.waitRunning(2, filepath.Join(dir, "fake", "bob.state"), 1)
	home.Kill()
	// The turn ends on the worker while no home is there to settle it.
	sessiontest.WaitFor(t, 20*time.Second, "turn 2 done on the worker", func() bool {
		return strings.Count(w.Output(), `"msg":"turn done"`) >= 2
	})
	if st := c.state(); st.Running == nil || st.Running.Turn != 2 {
		t.Fatalf("with the home down, the running attempt is %+v, want turn 2 waiting to be settled", st.Running)
	}
	// With the home down and no lock held, a local controller must not
	// take the remote turn for a dead controller's and run it again.
	for _, args := range [][]string{{"auto", c.name}, {"watch", "--once", "."}} {
		if r := c.MustRun(3, args...); !strings.Contains(r.Stdout+r.Stderr, "walkie auto --take-over") {
			t.Errorf("walkie %s refused without the fix:\n%s%s", args[0], r.Stdout, r.Stderr)
		}
	}
	c.startHome()
	c.waitStatus(walkie.StatusConverged, 60*time.Second)
	c.verify(3)
	recs := c.turns()
	c.onceEach(recs, 3)
	if len(recs) != 3 {
		t.Fatalf("%d attempts logged, want 3:\n%s", len(recs), blackbox.Dump(recs))
	}
}

// walkie halt while a turn runs on a worker: the home signals the
// workflow, the turn activity is cancelled, the worker ends the agent's
// session, and the attempt is recorded as halted.
func TestHaltEndsTheRemoteTurn(t *testing.T) {
	// alice says, as claude's stream-json would, that it runs a command,
	// then hangs: what the page shows is read from that event.
	tool := `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"make test"}}]}}`
	hanging := agentScripts{"alice": "behavior: hang\nshell: \"echo '" + strings.ReplaceAll(tool, `"`, `\"`) + "'\"", "bob": converging["bob"]}
	c := newCluster(t, "halt", 3, hanging)
	_, dir := c.startWorker("w", hanging, nil)
	c.startHome()
	c.waitRunning(1, filepath.Join(dir, "fake", "alice.state"), 1)
	sessiontest.WaitFor(t, 10*time.Second, "the agent running", func() bool { return len(c.marker.PidsRunning("fakeagent")) == 1 })
	// The fleet page shows the remote turn, with the agent's latest
	// output line from the worker's heartbeats.
	sessiontest.WaitFor(t, 15*time.Second, "the fleet page showing the remote turn's output", func() bool {
		r, _ := c.fleet()["running"].(map[string]any)
		line, _ := r["last_line"].(string)
		return r != nil && r["agent"] == "alice" && line == "running make test"
	})
	halted := time.Now()
	c.MustRun(0, "halt", c.name, "--reason", "enough")
	sessiontest.WaitFor(t, 15*time.Second, "the halted attempt recorded", func() bool { return len(c.turns()) == 1 })
	recs := c.turns()
	if r := recs[0]; r.Outcome != string(walkie.OutcomeHalted) || r.Worker != "w" || !strings.Contains(r.Detail, "halted by a person") {
		t.Fatalf("recorded %s", blackbox.Dump(recs))
	}
	if took := recs[0].EndedAt().Sub(halted); took > 10*time.Second {
		t.Fatalf("the session ended %s after the halt", took)
	}
	sessiontest.WaitFor(t, 5*time.Second, "the agent's process gone", func() bool { return len(c.marker.PidsRunning("fakeagent")) == 0 })
	if c.status() != walkie.StatusHalted || c.state().Running != nil {
		t.Fatalf("status %s, running %+v; want halted and nothing running", c.status(), c.state().Running)
	}
	c.verify(0)
}

// An agent that is not logged in fails with auth, which is never retried:
// not by walkie, and not by Temporal on the other worker of the queue.
func TestAuthFailureIsNotRetried(t *testing.T) {
	notLoggedIn := agentScripts{"alice": "behavior: not-logged-in", "bob": converging["bob"]}
	rules := map[string]map[string]string{"alice": {"rules": `[{match: "Not logged in", outcome: auth, detail: "alice is not logged in on this worker"}]`}}
	c := newCluster(t, "auth", 3, notLoggedIn)
	_, one := c.startWorker("w-one", notLoggedIn, rules)
	_, two := c.startWorker("w-two", notLoggedIn, rules)
	c.startHome()
	c.waitStatus(walkie.StatusFailed, 60*time.Second)
	recs := c.turns()
	if len(recs) != 1 || recs[0].Outcome != string(walkie.OutcomeAuth) || !strings.Contains(recs[0].Detail, "not logged in on this worker") {
		t.Fatalf("want one auth attempt:\n%s", blackbox.Dump(recs))
	}
	runs := 0
	for _, dir := range []string{one, two} {
		if b, err := os.ReadFile(filepath.Join(dir, "fake", "alice.state")); err == nil {
			n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			runs += n
		}
	}
	if runs != 1 {
		t.Fatalf("alice was started %d times across the two workers, want once", runs)
	}
	if got := turnStarts(c.history()); !slices.Equal(got, []int32{1}) {
		t.Fatalf("turn activity starts %v, want a single delivery", got)
	}
	if st := c.state(); !strings.Contains(st.Reason, "never retried") {
		t.Fatalf("reason %q, want it to say auth is never retried", st.Reason)
	}
}

// Debate ids are workflow ids: a second home (another directory) with a
// debate of the same id in the namespace is refused, and says whose the
// workflow is, rather than driving the first home's debate.
func TestSecondHomeWithTheSameDebateIDIsRefused(t *testing.T) {
	hanging := agentScripts{"alice": "behavior: hang", "bob": converging["bob"]}
	first := newCluster(t, "owner", 3, hanging)
	_, dir := first.startWorker("w", hanging, nil)
	first.startHome()
	first.waitRunning(1, filepath.Join(dir, "fake", "alice.state"), 1)

	second := *first
	second.Dir, second.home = t.TempDir(), first.home+"-second"
	second.listen = anyPort
	for _, name := range []string{first.name, "walkie.yaml"} {
		b, err := os.ReadFile(first.path(name))
		if err != nil {
			t.Fatal(err)
		}
		second.write(name, string(b))
	}
	second.startHome()
	sessiontest.WaitFor(t, 20*time.Second, "the second home refusing the debate", func() bool {
		msg, _ := second.fleet()["error"].(string)
		return strings.Contains(msg, "already run as a workflow by the home on task queue \""+first.home+"\"")
	})
	if st := second.state(); st.Running != nil {
		t.Fatalf("the second home began an attempt: %+v", st.Running)
	}
}
