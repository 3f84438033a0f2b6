package scaleout

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// A round table on the Temporal engine: the implementer and every
// reviewer and phase agent on workers, the grader and every file at home.

// newTable makes the round table id in the home's directory, under 1/ (a
// trial's layout, so walkie trials report reads it), its workspace work/
// beside it, approved; init are walkie init's round-table flags. It keeps
// a copy of the fresh record for a local twin (twin).
func newTable(t *testing.T, id string, scripts agentScripts, init ...string) *cluster {
	t.Helper()
	needServer(t)
	n := runs.Add(1)
	c := &cluster{id: fmt.Sprintf("%s-%d-%d", id, os.Getpid(), n), marker: blackbox.NewMarker(t), sub: "1"}
	c.Runner = walkieIn(t, t.TempDir(), c.marker)
	c.blobs = filepath.Join(t.TempDir(), "blobs")
	c.name = filepath.Join(c.sub, c.id+".walkie.md")
	for _, p := range slices.Sorted(maps.Keys(scripts)) {
		c.queues = append(c.queues, "--queue", fmt.Sprintf("%s=%s-%s", p, c.id, p))
	}
	c.home = c.id + "-home"
	c.listen = anyPort
	c.writeConfig(filepath.Join(c.Dir, "walkie.yaml"), c.Dir, scripts, nil)
	c.write("briefing.md", "Write work/calc, an integer calculator. Rule 1: results are exact.\n")
	if err := os.MkdirAll(c.path(filepath.Join(c.sub, "work")), 0o755); err != nil {
		t.Fatal(err)
	}
	c.write(filepath.Join(c.sub, "work", ".keep"), "")
	c.MustRun(0, append([]string{"init", c.name, "--briefing", "briefing.md", "--workspace", "work"}, init...)...)
	c.MustRun(0, "brief", "approve", c.name, "--yes")
	t.Cleanup(c.marker.Kill)
	return c
}

// twin runs a copy of the table's fresh record (made before anything ran)
// on the local engine with the same agents, and returns its directory.
func (c *cluster) twin(fresh []byte, scripts agentScripts, exitCode int) string {
	c.T.Helper()
	dir := c.T.TempDir()
	r := walkieIn(c.T, dir, c.marker)
	c.writeConfig(filepath.Join(dir, "walkie.yaml"), dir, scripts, nil)
	for p, b := range map[string][]byte{c.name: fresh, filepath.Join(c.sub, "work", ".keep"): nil} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			c.T.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			c.T.Fatal(err)
		}
	}
	r.MustRun(exitCode, "auto", c.name, "--approve")
	return dir
}

// sameReport fails unless walkie report reads the same of the table in
// the two directories, and so does walkie trials report of them, but for
// the times the sessions took and the phases' approvals.
func (c *cluster) sameReport(twin string) {
	c.T.Helper()
	timing := regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|m|h)\b|\d+m\d+(\.\d+)?s|approved by [^|]*`)
	for _, args := range [][]string{{"report", c.name}, {"trials", "report", "."}} {
		home := timing.ReplaceAllString(strings.ReplaceAll(c.MustRun(0, args...).Stdout, c.Dir, "DIR"), "T")
		local := timing.ReplaceAllString(strings.ReplaceAll(walkieIn(c.T, twin, c.marker).MustRun(0, args...).Stdout, twin, "DIR"), "T")
		if home != local {
			c.T.Errorf("walkie %s reads otherwise on the Temporal engine than on the local one:\n--- temporal\n%s\n--- local\n%s", strings.Join(args, " "), home, local)
		}
	}
}

// approveWhenAsked approves the phase once the home's fleet page asks a
// person to, as a person would: after the home has looked at the debate
// and parked it on the approval. (An approval that lands while the home
// is still failing the step is waited on as a change already seen: the
// daemon's race, as on the local engine.)
func (c *cluster) approveWhenAsked(phase string) {
	c.T.Helper()
	sessiontest.WaitFor(c.T, 60*time.Second, "the home asking for the "+phase+" phase's approval", func() bool {
		msg, _ := c.fleet()["error"].(string)
		return strings.Contains(msg, "the "+phase+" phase's file by") && strings.Contains(msg, "awaits approval")
	})
	c.MustRun(0, "phase", "approve", c.name, phase, "--yes")
}

// The table's agents: calc is the implementer, changing its workspace;
// brook blocks once, then approves; cy approves; gem and cla write the
// research notes and the spec.
var tableAgents = agentScripts{
	"calc": "usage: true\ncost_usd: 0.05\n" + `bodies: ["calc computes in floats.", "calc computes in integers now."]` + "\n" +
		`shells: ["echo floats > work/calc", "echo integers > work/calc"]`,
	"brook": "behavior: verdict\nusage: true\ncost_usd: 0.02\nverdicts:\n" +
		`  - '{"verdict": "request_changes", "objections": [{"summary": "loses precision", "rule": "Rule 1: results are exact", "failing_input": "2 ** 53 + 1", "blocking": true}]}'` + "\n" +
		`  - '{"verdict": "approve", "objections": []}'`,
	"cy":  "behavior: verdict\nusage: true\ncost_usd: 0.01",
	"gem": "behavior: write\nusage: true\ncost_usd: 0.03\n" + `body: "# Research\n\nIEEE 754 doubles have a 53-bit significand."`,
	"cla": "behavior: write\nusage: true\ncost_usd: 0.04\n" + `body: "# Spec\n\n§1 evaluate integers\n§2 results are exact integers"`,
}

func only(s agentScripts, names ...string) agentScripts {
	out := agentScripts{}
	for _, n := range names {
		out[n] = s[n]
	}
	return out
}

// A round table with research and plan phases across three workers: the
// implementer and the phase agents on one, a reviewer on each of the
// others. Each phase waits for a person's approval (walkie phase
// approve), then the rounds run and converge; every session ran on its
// agent's worker, every file is at home, and walkie report and walkie
// trials report read it exactly as they read the same table run on the
// local engine.
func TestRoundTableWithPhasesConvergesAcrossThreeWorkers(t *testing.T) {
	c := newTable(t, "table", tableAgents, "--implementer", "calc", "--reviewers", "brook,cy", "--phases", "research=gem,plan=cla",
		"--grader", "test -s calc && grep -q integers calc", "--max-rounds", "3")
	fresh, err := os.ReadFile(c.path(c.name))
	if err != nil {
		t.Fatal(err)
	}
	c.startWorker("w-calc", only(tableAgents, "calc", "gem", "cla"), nil)
	c.startWorker("w-brook", only(tableAgents, "brook"), nil)
	c.startWorker("w-cy", only(tableAgents, "cy"), nil)
	c.startHome()
	for _, phase := range []string{"research", "plan"} {
		c.approveWhenAsked(phase)
	}
	c.waitStatus(walkie.StatusConverged, 90*time.Second)
	c.MustRun(0, "verify", c.name)
	if b, err := os.ReadFile(c.path(filepath.Join(c.sub, "work", "calc"))); err != nil || string(b) != "integers\n" {
		t.Fatalf("the workspace at home holds %q (%v), want the implementer's last change", b, err)
	}
	recs := c.turns()
	where := map[string]string{"calc": "w-calc", "gem": "w-calc", "cla": "w-calc", "brook": "w-brook", "cy": "w-cy"}
	for _, r := range recs {
		if r.Worker != where[r.Agent] {
			t.Errorf("%s's %s attempt ran on %q, want %s", r.Agent, r.Role, r.Worker, where[r.Agent])
		}
		if r.Outcome != string(walkie.OutcomeAccepted) {
			t.Errorf("attempt %s", r)
		}
		if fi, err := os.Stat(filepath.Join(c.stateDir(), r.Transcript.Text)); err != nil || fi.Size() == 0 {
			t.Errorf("%s's transcript is not at home: %v", r.Agent, err)
		}
	}
	// Two phases, then two rounds of an implementer and two reviewers.
	if len(recs) != 8 {
		t.Fatalf("%d attempts, want 8:\n%s", len(recs), blackbox.Dump(recs))
	}
	c.sameReport(c.twin(fresh, tableAgents, 0))
	replay(t, c.history(), "roundtable")
}

// A reviewer's worker SIGKILLed while the reviewer writes its verdict:
// after the heartbeat timeout the session goes to the other worker of
// its queue, and the verdict is counted once. Started again, the killed
// worker ends the reviewer it left running and removes its private HOME.
func TestKilledReviewersWorkerIsRedeliveredAndCountedOnce(t *testing.T) {
	c := newTable(t, "killrev", tableAgents, "--implementer", "calc", "--reviewers", "brook,cy", "--grader", "test -s calc", "--max-rounds", "3")
	tmp := t.TempDir() // the first worker's TMPDIR: where its sessions' private HOMEs go
	private := map[string]map[string]string{"cy": {"home": "private"}}
	// The reviewer leaves a helper that left its process group and its
	// session, deaf to SIGTERM and SIGHUP, as a CLI's language server may;
	// then it hangs. Its session's leader dies with the worker, the
	// helper does not.
	lingers := agentScripts{"cy": "behavior: grandchild\ngrandchild_setsid: true\nhang_after: true"}
	c.startWorker("w-calc", only(tableAgents, "calc", "brook"), nil)
	first, firstDir := c.worker(workerSpec{name: "w-cy", scripts: lingers, extra: private, env: []string{"TMPDIR=" + tmp}})
	c.startHome()
	sessiontest.WaitFor(t, 60*time.Second, "cy's review running on w-cy", func() bool {
		homes, _ := filepath.Glob(filepath.Join(tmp, "walkie-home-*"))
		return blackbox.Invocations(filepath.Join(blackbox.FakeDir(firstDir), "cy.state")) >= 1 && len(homes) == 1
	})
	c.startWorker("w-cy2", only(tableAgents, "cy"), nil)
	first.Kill()
	c.waitStatus(walkie.StatusConverged, 90*time.Second)
	c.MustRun(0, "verify", c.name)
	var cy []blackbox.Turn
	for _, r := range c.turns() {
		if r.Agent == "cy" {
			cy = append(cy, r)
		}
	}
	// cy reviews twice (brook blocks round 1), each once, on w-cy2.
	if len(cy) != 2 || cy[0].Worker != "w-cy2" || cy[0].Outcome != string(walkie.OutcomeAccepted) || cy[0].Attempt != 1 {
		t.Fatalf("cy's attempts:\n%s", blackbox.Dump(cy))
	}
	d := blackbox.Holds(t, c.path(c.name), 6)
	verdicts := 0
	for _, e := range d.Entries {
		if e.Kind == walkie.KindTurn && e.Agent == "cy" {
			verdicts++
		}
	}
	if verdicts != 2 {
		t.Fatalf("the record holds %d verdicts by cy, want one a round", verdicts)
	}
	// The dead worker's reviewer left its helper running, and its private
	// HOME.
	if homes, _ := filepath.Glob(filepath.Join(tmp, "walkie-home-*")); len(homes) != 1 || len(c.marker.PidsRunning("--grandchild-mode")) != 1 {
		t.Fatalf("before the restart: homes %v, helpers %v; want the dead session's", homes, c.marker.PidsRunning("--grandchild-mode"))
	}
	again, _ := c.worker(workerSpec{name: "w-cy", scripts: lingers, extra: private, env: []string{"TMPDIR=" + tmp}, dir: firstDir})
	sessiontest.WaitFor(t, 10*time.Second, "the restarted worker sweeping the dead session", func() bool {
		return strings.Contains(again.Output(), "ended a session left by an earlier worker")
	})
	if homes, _ := filepath.Glob(filepath.Join(tmp, "walkie-home-*")); len(homes) != 0 {
		t.Fatalf("private HOMEs left after the restart: %v", homes)
	}
	sessiontest.WaitFor(t, 5*time.Second, "the dead session's helper gone", func() bool { return len(c.marker.PidsRunning("--grandchild-mode")) == 0 })
}

// Two reviewers who take turns blocking on an input the briefing never
// decided, and an implementer who pleases whoever objected last: the
// table stops as deadlocked in round 3, naming the question, as it does
// on the local engine.
func TestRoundTableDeadlocksAsLocally(t *testing.T) {
	agents := agentScripts{
		"impl": "usage: true\ncost_usd: 0.25\nshell: \"echo accept-empty > work/parse\"\nwhen:\n  - last_blocker: left\n    shell: \"echo refuse-empty > work/parse\"\n" +
			"  - last_blocker: right\n    shell: \"echo accept-empty > work/parse\"",
		"left": "behavior: verdict\nusage: true\ncost_usd: 0.125\n" +
			`verdict: '{"verdict": "request_changes", "objections": [{"summary": "empty input accepted", "rule": "a list has at least one item", "failing_input": "\"\"", "blocking": true}]}'` +
			"\nwhen:\n  - file: parse\n    contains: refuse-empty\n    verdict: '{\"verdict\": \"approve\"}'",
		"right": "behavior: verdict\nusage: true\ncost_usd: 0.0625\n" +
			`verdict: '{"verdict": "request_changes", "objections": [{"summary": "empty input refused", "rule": "every string parses", "failing_input": "\"\"", "blocking": true}]}'` +
			"\nwhen:\n  - file: parse\n    contains: accept-empty\n    verdict: '{\"verdict\": \"approve\"}'",
	}
	c := newTable(t, "deadlock", agents, "--implementer", "impl", "--reviewers", "left,right", "--grader", "true", "--max-rounds", "5")
	fresh, err := os.ReadFile(c.path(c.name))
	if err != nil {
		t.Fatal(err)
	}
	c.startWorker("w-impl", only(agents, "impl"), nil)
	c.startWorker("w-left", only(agents, "left"), nil)
	c.startWorker("w-right", only(agents, "right"), nil)
	c.startHome()
	c.waitStatus(walkie.StatusDeadlocked, 120*time.Second)
	c.MustRun(0, "verify", c.name)
	report := c.MustRun(0, "report", c.name).Stdout
	for _, want := range []string{"- outcome: **deadlocked**", "## Deadlock", `what must the work do on the input "\"\""?`} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	if _, err := os.Stat(filepath.Join(c.stateDir(), "roundtable", "deadlock.md")); err != nil {
		t.Errorf("no deadlock.md: %v", err)
	}
	if n := len(c.turns()); n != 9 {
		t.Errorf("%d attempts, want three rounds of three", n)
	}
	c.sameReport(c.twin(fresh, agents, 14))
}
