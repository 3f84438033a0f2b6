package scaleout

import (
	"fmt"
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
	c := &cluster{id: fmt.Sprintf("%s-%d", name, os.Getpid()), marker: blackbox.NewMarker(b), uncounted: true}
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
