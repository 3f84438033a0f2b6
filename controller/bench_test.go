package controller

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// benchTurns is how many trivial turns one debate of the benchmark runs.
const benchTurns = 200

// BenchmarkTurnGap runs debates of 200 trivial turns, each a fresh agent
// process in a pty that appends its turn and exits, and reports the
// handoff: the time from one agent's exit to the next agent's start
// (median and 99th percentile, in milliseconds; the target is a median
// of at most 4 ms and a 99th percentile of at most 10 ms). In the same
// run it spawns the same agent 200 times in a row with plain os/exec and
// through a bare pty (the least any controller can pay for the handoff)
// and reports the ratios. The controller's CPU per turn is getrusage of
// this process around the run (RUSAGE_SELF, target at most 1 ms); the
// agents' own (RUSAGE_CHILDREN) is reported beside it, and so is the CPU
// of the bare pty spawn and of keptSpawn, the pty spawn followed by the
// synced writes every turn keeps (cpu/kept: how far the controller is
// from that floor).
//
//	go test ./controller -run '^$' -bench TurnGap -benchtime 1x
func BenchmarkTurnGap(b *testing.B) {
	agent := buildBenchAgent(b)
	var gaps, execGaps, ptyGaps, keptGaps []time.Duration
	var cpu, agentCPU, execCPU, ptyCPU, keptCPU time.Duration
	turns, spawns := 0, 0
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		file, times, cfg := benchDebate(b, agent)
		before, agentsBefore := selfCPU(b), childCPU(b)
		b.StartTimer()
		sum, err := Run(context.Background(), Options{File: file, Config: cfg, Approve: true})
		b.StopTimer()
		cpu += selfCPU(b) - before
		agentCPU += childCPU(b) - agentsBefore
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

		before = selfCPU(b)
		execGaps = append(execGaps, spawnGaps(b, agent, execSpawn)...)
		execCPU += selfCPU(b) - before
		before = selfCPU(b)
		ptyGaps = append(ptyGaps, spawnGaps(b, agent, ptySpawn)...)
		ptyCPU += selfCPU(b) - before
		before = selfCPU(b)
		keptGaps = append(keptGaps, spawnGaps(b, agent, keptSpawn(b))...)
		keptCPU += selfCPU(b) - before
		spawns += benchTurns
	}
	for _, g := range [][]time.Duration{gaps, execGaps, ptyGaps, keptGaps} {
		slices.Sort(g)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	p50, p99 := percentile(gaps, 50), percentile(gaps, 99)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(percentile(execGaps, 50)), "exec-p50-ms")
	b.ReportMetric(ms(percentile(ptyGaps, 50)), "pty-p50-ms")
	b.ReportMetric(float64(p50)/float64(percentile(execGaps, 50)), "p50/exec")
	b.ReportMetric(float64(p50)/float64(percentile(ptyGaps, 50)), "p50/pty")
	b.ReportMetric(float64(p99)/float64(percentile(ptyGaps, 99)), "p99/pty-p99")
	b.ReportMetric(ms(cpu)/float64(turns), "cpu-ms/turn")
	b.ReportMetric(ms(agentCPU)/float64(turns), "agent-cpu-ms/turn")
	b.ReportMetric(ms(execCPU)/float64(spawns), "exec-cpu-ms/spawn")
	b.ReportMetric(ms(ptyCPU)/float64(spawns), "pty-cpu-ms/spawn")
	b.ReportMetric(ms(percentile(keptGaps, 50)), "kept-p50-ms")
	b.ReportMetric(ms(keptCPU)/float64(spawns), "kept-cpu-ms/spawn")
	b.ReportMetric(float64(cpu)/float64(turns)/(float64(keptCPU)/float64(spawns)), "cpu/kept")
}

// spawnGaps runs the agent benchTurns times in a row, each started by
// spawn once the one before has exited, and returns the gaps between one
// run's exit and the next one's start, as turnGaps does for a debate.
func spawnGaps(b *testing.B, agent string, spawn func(*testing.B, *exec.Cmd)) []time.Duration {
	b.Helper()
	dir := b.TempDir()
	file, times := filepath.Join(dir, "scratch.md"), filepath.Join(dir, "times")
	for i := range benchTurns {
		spawn(b, exec.Command(agent, file, "a", strconv.Itoa(i+1), times))
	}
	return turnGaps(b, times)
}

// execSpawn runs cmd with plain os/exec, its output discarded.
func execSpawn(b *testing.B, cmd *exec.Cmd) {
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
}

// ptySpawn runs cmd in a fresh pty, read to its end: what a session does
// at the least.
func ptySpawn(b *testing.B, cmd *exec.Cmd) {
	f, err := pty.Start(cmd)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, f) // EIO once the child has closed the terminal
	f.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
}

// keptSpawn runs cmd as ptySpawn does, then makes the writes every turn
// keeps whatever the controller does: the entry appended to the record and
// synced, a line appended to the turn log and synced, and the state
// replaced durably. It is the least a controller that keeps walkie's
// guarantees can spend a turn, measured beside it.
func keptSpawn(b *testing.B) func(*testing.B, *exec.Cmd) {
	dir := b.TempDir()
	record, log, state := filepath.Join(dir, "record.md"), filepath.Join(dir, "turns.jsonl"), filepath.Join(dir, "state.json")
	entry := []byte(strings.Repeat("An argument of a usual length for a turn. ", 20) + "\n")
	return func(b *testing.B, cmd *exec.Cmd) {
		ptySpawn(b, cmd)
		for _, p := range []string{record, log} {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			_, err = f.Write(entry)
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := walkie.RewriteFile(state, entry, 0o644); err != nil {
			b.Fatal(err)
		}
	}
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
	// The agents note their times in a file the sandbox lets them write:
	// it must be there for the grant to be made.
	if err := os.WriteFile(times, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	var y strings.Builder
	y.WriteString("defaults:\n  home: inherit\n  grace: 5s\n  timeout: 1m\nagents:\n")
	for _, name := range []string{"a", "b"} {
		fmt.Fprintf(&y, "  %s:\n    command: [%q, \"{file}\", \"{agent}\", \"{turn}\", %q]\n    sandbox_write: [%q]\n", name, agent, times, times)
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

// childCPU is the user and system CPU time of this process's children
// that have been waited for.
func childCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
