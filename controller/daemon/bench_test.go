package daemon

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// idleDaemon starts a daemon over n debates whose next party has no
// command (a person or a live session), and waits until every worker has
// looked at its debate and gone to sleep.
func idleDaemon(t testing.TB, n int) *running {
	dir := t.TempDir()
	cfg := testConfig(t, []string{fakeAgent("fa")}, "")
	for i := range n {
		newDebate(t, dir, fmt.Sprintf("quiet%02d", i), 3, "alice", "fa")
	}
	d := startDaemon(t, Options{Dir: dir, Config: cfg})
	sessiontest.WaitFor(t, 10*time.Second, "every debate waiting for alice", func() bool {
		v := d.Debates()
		if len(v) != n {
			return false
		}
		for _, x := range v {
			if !strings.Contains(x.Waiting, "alice") {
				return false
			}
		}
		return true
	})
	return d
}

// measureCPU returns the CPU the process used per second of wall time
// over d, as a fraction of one core.
func measureCPU(d time.Duration) float64 {
	runtime.GC()
	c0, w0 := cpuTime(), time.Now()
	time.Sleep(d)
	return float64(cpuTime()-c0) / float64(time.Since(w0))
}

// Fifty debates waiting on silent parties cost the daemon next to no CPU:
// it sleeps on file events and never polls.
func TestDaemonIdleCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("measures CPU over two seconds")
	}
	d := idleDaemon(t, 50)
	defer d.stop(t)
	time.Sleep(200 * time.Millisecond) // let start-up work settle
	frac := measureCPU(2 * time.Second)
	t.Logf("50 idle debates: %.3f%% of one core", 100*frac)
	// Zero in principle; the bound leaves room for the test process itself
	// and the race detector's background work on a shared machine.
	if frac > 0.02 {
		t.Errorf("the daemon used %.2f%% of a core while every debate waited on a silent party", 100*frac)
	}
}

// BenchmarkDaemonIdleCPU reports the daemon's CPU (percent of one core)
// while 50 debates wait on parties without a command, beside the same
// process's CPU before the daemon started (the baseline).
func BenchmarkDaemonIdleCPU(b *testing.B) {
	base := measureCPU(time.Second)
	d := idleDaemon(b, 50)
	defer d.stop(b)
	time.Sleep(200 * time.Millisecond)
	b.ResetTimer()
	var frac float64
	for range b.N {
		frac = measureCPU(3 * time.Second)
	}
	b.ReportMetric(100*frac, "cpu-%")
	b.ReportMetric(100*base, "baseline-cpu-%") // after the loop: ResetTimer clears reported metrics
}

// BenchmarkDaemonSilentSessions reports the daemon's CPU while 50 agent
// sessions run and print nothing (their own CPU is not counted: they are
// other processes), and its memory per running session: Go heap and
// goroutines, measured against the same daemon with no session.
func BenchmarkDaemonSilentSessions(b *testing.B) {
	const n = 50
	dir := b.TempDir()
	cfg := testConfig(b, []string{fakeAgent("mute", "--behavior", "hang"), fakeAgent("fa")}, "")
	files := make([]string, n)
	for i := range n {
		files[i] = newDebate(b, dir, fmt.Sprintf("mute%02d", i), 3, "alice", "mute")
	}
	d := startDaemon(b, Options{Dir: dir, Config: cfg, Grace: 100 * time.Millisecond})
	defer d.stop(b)
	sessiontest.WaitFor(b, 10*time.Second, "every debate waiting for alice", func() bool {
		v := d.Debates()
		if len(v) != n {
			return false
		}
		for _, x := range v {
			if !strings.Contains(x.Waiting, "alice") {
				return false
			}
		}
		return true
	})
	time.Sleep(200 * time.Millisecond)
	heap0, g0 := heapInUse(), runtime.NumGoroutine()
	// alice answers everywhere; now it is mute's turn, and mute never speaks.
	for _, f := range files {
		postAs(b, f, "alice")
	}
	sessiontest.WaitFor(b, 30*time.Second, "every mute session running", func() bool { return d.limits.Running() == n && allRunning(d.Daemon) })
	time.Sleep(500 * time.Millisecond)
	heap1, g1 := heapInUse(), runtime.NumGoroutine()
	b.ResetTimer()
	var frac float64
	for range b.N {
		frac = measureCPU(3 * time.Second)
	}
	b.StopTimer()
	b.ReportMetric(100*frac, "cpu-%")
	b.ReportMetric(float64(heap1-heap0)/n, "heap-B/session")
	b.ReportMetric(float64(g1-g0)/n, "goroutines/session")
	if os.Getenv("WALKIE_BENCH_VERBOSE") != "" {
		b.Logf("heap %d → %d bytes, goroutines %d → %d", heap0, heap1, g0, g1)
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

func allRunning(d *Daemon) bool {
	for _, v := range d.Debates() {
		if v.Running == nil {
			return false
		}
	}
	return true
}
