package scaleout

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// benchDebates is how many debates each side of the benchmark runs.
const benchDebates = 100

// fleetRun is how one engine ran the same debates.
type fleetRun struct {
	elapsed  time.Duration // first turn's start to last turn's end
	handoffs []time.Duration
}

// BenchmarkScaleOut100 runs 100 debates of fast scripted agents (three
// turns each) on the local daemon, then the same 100 on the Temporal
// engine with three worker processes on this machine, and reports the
// throughput and the median handoff (one turn's end to the next turn's
// start in the same debate) of each, and their ratios. Both sides run in
// the same process on the same machine, so its load moves both alike.
func BenchmarkScaleOut100(b *testing.B) {
	needServer(b)
	for i := range b.N {
		local := runFleet(b, fmt.Sprintf("local%d", i), 0)
		remote := runFleet(b, fmt.Sprintf("tmp%d", i), 3)
		lt := float64(benchDebates) / local.elapsed.Seconds()
		rt := float64(benchDebates) / remote.elapsed.Seconds()
		lh, rh := median(local.handoffs), median(remote.handoffs)
		b.ReportMetric(lt, "local-debates/s")
		b.ReportMetric(rt, "temporal-debates/s")
		b.ReportMetric(rt/lt, "throughput-temporal/local")
		b.ReportMetric(float64(lh.Microseconds())/1000, "local-handoff-p50-ms")
		b.ReportMetric(float64(rh.Microseconds())/1000, "temporal-handoff-p50-ms")
		b.ReportMetric(float64(rh)/float64(lh), "handoff-temporal/local")
	}
}

// runFleet runs benchDebates debates under one served directory, on the
// local daemon (workers == 0) or on the Temporal engine with that many
// worker processes, until every one has converged.
func runFleet(b *testing.B, name string, workers int) fleetRun {
	b.Helper()
	scripts := agentScripts{"alice": converging["alice"], "bob": converging["bob"]}
	c := &cluster{id: fmt.Sprintf("%s-%d-%d", name, os.Getpid(), runs.Add(1)), marker: blackbox.NewMarker(b), uncounted: true}
	c.Runner = walkieIn(b, b.TempDir(), c.marker)
	c.blobs = filepath.Join(b.TempDir(), "blobs")
	c.queues = []string{"--queue", "alice=" + c.id + "-alice", "--queue", "bob=" + c.id + "-bob"}
	c.home, c.listen = c.id+"-home", ""
	c.writeConfig(filepath.Join(c.Dir, "walkie.yaml"), c.Dir, scripts, nil)
	var files []string
	for i := range benchDebates {
		file := filepath.Join(c.Dir, fmt.Sprintf("%s-%03d.walkie.md", c.id, i))
		if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"alice", "bob"}, MaxRounds: 3, Briefing: []byte("Does it pass?\n")}); err != nil {
			b.Fatal(err)
		}
		if _, err := walkie.Approve(file); err != nil {
			b.Fatal(err)
		}
		files = append(files, file)
	}
	b.Cleanup(c.marker.Kill)
	for i := range workers {
		c.startWorker(fmt.Sprintf("w%d", i), scripts, nil)
	}
	var home *blackbox.Proc
	if workers > 0 {
		home = c.startHome()
	} else {
		home = c.Start("serve", "--dir", ".", "--listen", "", "--log-format", "json")
	}
	sessiontest.WaitFor(b, 5*time.Minute, "every debate ended", func() bool {
		for _, f := range files {
			m, err := walkie.ReadMeta(f)
			if err != nil {
				return false
			}
			s, err := walkie.LoadSignal(walkie.StateDir(f, m.ID))
			if err != nil || s == nil || s.Status == walkie.StatusOpen {
				return false
			}
		}
		return true
	})
	home.Kill()
	var run fleetRun
	var first, last time.Time
	for _, f := range files {
		m, _ := walkie.ReadMeta(f)
		recs := blackbox.ReadTurns(b, walkie.StateDir(f, m.ID))
		if len(recs) != 3 {
			b.Fatalf("%s: %d attempts, want 3:\n%s", f, len(recs), blackbox.Dump(recs))
		}
		for i, r := range recs {
			if first.IsZero() || r.StartedAt().Before(first) {
				first = r.StartedAt()
			}
			last = maxTime(last, r.EndedAt())
			if i > 0 {
				run.handoffs = append(run.handoffs, r.StartedAt().Sub(recs[i-1].EndedAt()))
			}
		}
	}
	run.elapsed = last.Sub(first)
	return run
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchTable is a round table of an implementer and three reviewers, each
// session taking a second of "agent time" (the fake agent's delay), two
// rounds: the first reviewer blocks once.
var benchTable = agentScripts{
	"impl": "delay: 1s\nbodies: [\"calc in floats.\", \"calc in integers.\"]\nshells: [\"echo floats > work/calc\", \"echo integers > work/calc\"]",
	"r1": "behavior: verdict\ndelay: 1s\nverdicts:\n" +
		`  - '{"verdict": "request_changes", "objections": [{"summary": "loses precision", "rule": "Rule 1: results are exact", "failing_input": "2 ** 53 + 1", "blocking": true}]}'` + "\n" +
		`  - '{"verdict": "approve", "objections": []}'`,
	"r2": "behavior: verdict\ndelay: 1s",
	"r3": "behavior: verdict\ndelay: 1s",
}

// tableRun is how one engine ran the round table: its wall time (first
// session's start to the last one's end) and the time some session was
// running in it (the union of the sessions' spans), the rest being
// coordination: freezes, the grader, verdicts into the record, the
// hand-offs between steps, and on the Temporal engine the workflow's
// round trips, the sandboxes packed and sent.
type tableRun struct {
	wall, agent time.Duration
}

// BenchmarkScaleOut runs one round table (an implementer and three
// reviewers, two rounds) on the local engine (walkie auto: its reviewers
// run at once, on this machine), then on the Temporal engine with the
// implementer and each reviewer on a worker of its own (three task
// queues, three worker processes), and reports the Temporal engine's wall
// time over the local one's and, for each, the share of the wall time
// some agent session was running. On one machine the ratio can only be
// close to 1 (the reviewers run at once either way, on the same cores);
// what the engine costs is its share of coordination.
func BenchmarkScaleOut(b *testing.B) {
	needServer(b)
	for i := range b.N {
		local := runTable(b, fmt.Sprintf("blocal%d", i), false)
		remote := runTable(b, fmt.Sprintf("btmp%d", i), true)
		b.ReportMetric(remote.wall.Seconds()/local.wall.Seconds(), "wall-temporal/local")
		b.ReportMetric(local.wall.Seconds(), "local-wall-s")
		b.ReportMetric(remote.wall.Seconds(), "temporal-wall-s")
		b.ReportMetric(100*local.agent.Seconds()/local.wall.Seconds(), "local-agent-%")
		b.ReportMetric(100*remote.agent.Seconds()/remote.wall.Seconds(), "temporal-agent-%")
	}
}

// runTable runs the bench round table to its end on one engine.
func runTable(b *testing.B, name string, temporalEngine bool) tableRun {
	b.Helper()
	c := &cluster{id: fmt.Sprintf("%s-%d-%d", name, os.Getpid(), runs.Add(1)), marker: blackbox.NewMarker(b), sub: "."}
	c.Runner = walkieIn(b, b.TempDir(), c.marker)
	c.blobs = filepath.Join(b.TempDir(), "blobs")
	c.name = c.id + ".walkie.md"
	for _, p := range slices.Sorted(maps.Keys(benchTable)) {
		c.queues = append(c.queues, "--queue", fmt.Sprintf("%s=%s-%s", p, c.id, p))
	}
	c.home, c.listen = c.id+"-home", anyPort
	c.writeConfig(filepath.Join(c.Dir, "walkie.yaml"), c.Dir, benchTable, nil)
	c.write("briefing.md", "Write work/calc. Rule 1: results are exact.\n")
	if err := os.MkdirAll(c.path("work"), 0o755); err != nil {
		b.Fatal(err)
	}
	c.MustRun(0, "init", c.name, "--briefing", "briefing.md", "--workspace", "work", "--implementer", "impl", "--reviewers", "r1,r2,r3",
		"--grader", "grep -q integers calc", "--max-rounds", "3")
	c.MustRun(0, "brief", "approve", c.name, "--yes")
	b.Cleanup(c.marker.Kill)
	if temporalEngine {
		c.startWorker("w-impl", only(benchTable, "impl"), nil)
		for _, r := range []string{"r1", "r2", "r3"} {
			c.startWorker("w-"+r, only(benchTable, r), nil)
		}
		home := c.startHome()
		sessiontest.WaitFor(b, 5*time.Minute, "the round table converged", func() bool {
			return c.status() == walkie.StatusConverged && c.state().Running == nil
		})
		home.Kill()
	} else {
		c.MustRun(0, "auto", c.name)
	}
	recs := c.turns()
	if len(recs) != 8 {
		b.Fatalf("%d attempts, want two rounds of four:\n%s", len(recs), blackbox.Dump(recs))
	}
	return spans(recs)
}

// spans is the wall time of the attempts and the union of their spans.
func spans(recs []blackbox.Turn) tableRun {
	type span struct{ from, to time.Time }
	var ss []span
	for _, r := range recs {
		ss = append(ss, span{r.StartedAt(), r.EndedAt()})
	}
	slices.SortFunc(ss, func(a, b span) int { return a.from.Compare(b.from) })
	var run tableRun
	first, last := ss[0].from, ss[0].to
	cur := ss[0]
	for _, s := range ss[1:] {
		last = maxTime(last, s.to)
		if s.from.After(cur.to) {
			run.agent += cur.to.Sub(cur.from)
			cur = s
			continue
		}
		cur.to = maxTime(cur.to, s.to)
	}
	run.agent += cur.to.Sub(cur.from)
	run.wall = last.Sub(first)
	return run
}
