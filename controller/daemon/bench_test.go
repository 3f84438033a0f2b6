package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
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

// BenchmarkServeScale loads the daemon (walkie serve) with 100 and then
// 1,000 debates, each waiting on a person (a party without a command),
// and reports for each load: start-up (the daemon started to every debate
// seen waiting), the RSS and Go heap the load adds, idle CPU (percent of
// one core over 2 s), the pickup of a debate dropped in afterwards (its
// file made to its agent's session started) and a person's post to the
// next agent's session start (the doorbell to start) in one of the loaded
// debates. The dropped-in debate is made elsewhere and renamed in, so
// the pickup is the daemon's alone. The ratios 1000/100 show how each grows: 10 is linear, and
// none should be worse. A session counts as started once the controller
// has recorded its process in state.json, right after the start.
//
//	go test ./controller/daemon -run '^$' -bench ServeScale -benchtime 1x
func BenchmarkServeScale(b *testing.B) {
	counts := []int{100, 1000}
	var figs []serveFigures
	for range b.N {
		figs = figs[:0]
		for _, n := range counts {
			figs = append(figs, measureServe(b, n))
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i, n := range counts {
		f := figs[i]
		b.ReportMetric(ms(f.startup), fmt.Sprintf("startup-ms-%d", n))
		b.ReportMetric(f.rssMB, fmt.Sprintf("rss-MB-%d", n))
		b.ReportMetric(f.heapMB, fmt.Sprintf("heap-MB-%d", n))
		b.ReportMetric(100*f.idleCPU, fmt.Sprintf("idle-cpu-%%-%d", n))
		b.ReportMetric(ms(f.pickup), fmt.Sprintf("pickup-ms-%d", n))
		b.ReportMetric(ms(f.post), fmt.Sprintf("post-start-ms-%d", n))
	}
	small, large := figs[0], figs[len(figs)-1]
	ratio := func(a, b float64) float64 { return a / max(b, 1e-9) }
	b.ReportMetric(ratio(float64(large.startup), float64(small.startup)), "startup-1000/100")
	b.ReportMetric(ratio(large.rssMB, small.rssMB), "rss-1000/100")
	b.ReportMetric(ratio(large.heapMB, small.heapMB), "heap-1000/100")
	b.ReportMetric(ratio(large.idleCPU, small.idleCPU), "idle-cpu-1000/100")
	b.ReportMetric(ratio(float64(large.pickup), float64(small.pickup)), "pickup-1000/100")
	b.ReportMetric(ratio(float64(large.post), float64(small.post)), "post-start-1000/100")
}

// serveFigures is what BenchmarkServeScale measures of one load.
type serveFigures struct {
	startup, pickup, post time.Duration
	rssMB, heapMB         float64
	idleCPU               float64 // fraction of one core
}

// measureServe runs a daemon over n debates waiting on alice, whose
// other party hangs once started (so its session stays to be seen).
func measureServe(b *testing.B, n int) serveFigures {
	b.Helper()
	dir := b.TempDir()
	cfg := testConfig(b, []string{fakeAgent("mute", "--behavior", "hang")}, "")
	files := make([]string, n)
	for i := range n {
		files[i] = newDebate(b, dir, fmt.Sprintf("load%04d", i), 3, "alice", "mute")
	}
	rss0, heap0 := rssMB(), heapInUse()
	var f serveFigures
	start := time.Now()
	d := startDaemon(b, Options{Dir: dir, Config: cfg, Grace: 100 * time.Millisecond})
	defer d.stop(b)
	sessiontest.WaitFor(b, 5*time.Minute, fmt.Sprintf("all %d debates waiting for alice", n), func() bool {
		v := d.Debates()
		return len(v) == n && !slices.ContainsFunc(v, func(x DebateView) bool { return !strings.Contains(x.Waiting, "alice") })
	})
	f.startup = time.Since(start)
	time.Sleep(200 * time.Millisecond) // let start-up work settle
	f.rssMB, f.heapMB = rssMB()-rss0, float64(heapInUse()-heap0)/(1<<20)
	f.idleCPU = measureCPU(2 * time.Second)

	// Made elsewhere and moved in whole, state first: the pickup is the
	// daemon's, not walkie init's.
	staged := newDebate(b, b.TempDir(), "dropped", 3, "mute", "alice")
	dropped := filepath.Join(dir, filepath.Base(staged))
	if err := os.Rename(walkie.StateDir(staged, "dropped"), walkie.StateDir(dropped, "dropped")); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	if err := os.Rename(staged, dropped); err != nil {
		b.Fatal(err)
	}
	awaitSession(b, dropped)
	f.pickup = time.Since(start)

	start = time.Now()
	postAs(b, files[n/2], "alice")
	awaitSession(b, files[n/2])
	f.post = time.Since(start)
	return f
}

// awaitSession polls, finely and within a bound, until the debate's
// running attempt names its session's process.
func awaitSession(b *testing.B, file string) {
	b.Helper()
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		b.Fatal(err)
	}
	dir := walkie.StateDir(file, meta.ID)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		if st, err := walkie.LoadState(dir); err == nil && st.Running != nil && walkie.LoadSessionNote(dir, st.Running.Session) != nil {
			return
		}
	}
	b.Fatalf("%s: no session started within a minute", file)
}

// rssMB is this process's resident set in MB (0 where /proc is not).
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
