package controller

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// benchTurns is how many trivial turns one debate of the benchmark runs.
const benchTurns = 200

// BenchmarkTurnGap runs debates of 200 trivial turns, each a fresh agent
// process that appends its turn and exits, and reports the time from one
// agent's exit to the next agent's start (median and 99th percentile, in
// milliseconds; the target is a median under 10 ms), and the controller's
// own CPU time per turn (this process's, not the agents').
//
//	go test ./controller -run '^$' -bench TurnGap -benchtime 1x
func BenchmarkTurnGap(b *testing.B) {
	agent := buildBenchAgent(b)
	var gaps []time.Duration
	var cpu time.Duration
	turns := 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		file, times, cfg := benchDebate(b, agent)
		before := selfCPU(b)
		b.StartTimer()
		sum, err := Run(context.Background(), Options{File: file, Config: cfg, Approve: true})
		b.StopTimer()
		cpu += selfCPU(b) - before
		if err != nil {
			b.Fatal(err)
		}
		if sum.Turns != benchTurns || sum.Status != walkie.StatusMaxRounds {
			b.Fatalf("the debate ended %s after %d turns", sum.Status, sum.Turns)
		}
		for _, a := range sum.Attempts {
			if a.Outcome != walkie.OutcomeAccepted {
				b.Fatalf("turn %d: %s (%s)", a.Turn, a.Outcome, a.Detail)
			}
		}
		gaps = append(gaps, turnGaps(b, times)...)
		turns += sum.Turns
	}
	slices.Sort(gaps)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(percentile(gaps, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(gaps, 99)), "p99-ms")
	b.ReportMetric(ms(cpu)/float64(turns), "cpu-ms/turn")
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// buildBenchAgent builds testdata/benchagent once per benchmark.
func buildBenchAgent(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "benchagent")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/benchagent").CombinedOutput(); err != nil {
		b.Fatalf("build benchagent: %v\n%s", err, out)
	}
	return bin
}

// benchDebate makes a debate of benchTurns turns between two benchagents
// that never sign, with an inherited HOME so nothing but the agent runs
// between turns.
func benchDebate(b *testing.B, agent string) (file, times string, cfg *config.Config) {
	b.Helper()
	dir := b.TempDir()
	file = filepath.Join(dir, "bench.walkie.md")
	times = filepath.Join(dir, "times")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"a", "b"}, MaxRounds: benchTurns / 2,
		Briefing: []byte("Benchmark the controller between turns.\n")}); err != nil {
		b.Fatal(err)
	}
	var y strings.Builder
	y.WriteString("defaults:\n  home: inherit\n  grace: 5s\n  timeout: 1m\nagents:\n")
	for _, name := range []string{"a", "b"} {
		fmt.Fprintf(&y, "  %s:\n    command: [%q, \"{file}\", \"{agent}\", \"{turn}\", %q]\n", name, agent, times)
	}
	cfg, err := config.Parse(filepath.Join(dir, "walkie.yaml"), []byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	return file, times, cfg
}

// turnGaps reads the agents' start and exit times and returns, for each
// turn after the first, the time from the previous agent's exit to its
// start.
func turnGaps(b *testing.B, times string) []time.Duration {
	b.Helper()
	f, err := os.Open(times)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var gaps []time.Duration
	var prevExit int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		start, exit, ok := strings.Cut(sc.Text(), " ")
		s, err1 := strconv.ParseInt(start, 10, 64)
		e, err2 := strconv.ParseInt(exit, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			b.Fatalf("times: bad line %q", sc.Text())
		}
		if prevExit != 0 {
			gaps = append(gaps, time.Duration(s-prevExit))
		}
		prevExit = e
	}
	if len(gaps) != benchTurns-1 {
		b.Fatalf("times: %d gaps for %d turns", len(gaps), benchTurns)
	}
	return gaps
}

// selfCPU is the user and system CPU time this process has used, without
// its children's.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
