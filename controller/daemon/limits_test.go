package daemon

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

func TestLimiterSessions(t *testing.T) {
	l := NewLimiter(config.Limits{MaxSessions: 3, PerAgentSessions: map[string]int{"a": 2}}, 0)
	defer l.Close()
	var total, perA, maxTotal, maxA atomic.Int32
	bump := func(v *atomic.Int32, max *atomic.Int32) {
		n := v.Add(1)
		for {
			m := max.Load()
			if n <= m || max.CompareAndSwap(m, n) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for i := range 40 {
		agent := []string{"a", "b"}[i%2]
		wg.Go(func() {
			rel, err := l.Acquire(context.Background(), agent)
			if err != nil {
				t.Error(err)
				return
			}
			bump(&total, &maxTotal)
			if agent == "a" {
				bump(&perA, &maxA)
			}
			time.Sleep(2 * time.Millisecond)
			if agent == "a" {
				perA.Add(-1)
			}
			total.Add(-1)
			rel()
			rel() // a second release is a no-op
		})
	}
	wg.Wait()
	if maxTotal.Load() > 3 || maxA.Load() > 2 {
		t.Fatalf("limits exceeded: %d at once (max 3), %d of a (max 2)", maxTotal.Load(), maxA.Load())
	}
	if maxTotal.Load() < 2 {
		t.Errorf("never ran more than %d at once; the limiter serialises", maxTotal.Load())
	}
	if l.Running() != 0 {
		t.Errorf("Running = %d after every release", l.Running())
	}
}

// A waiter for an agent at its own limit must not block another agent's
// waiter queued behind it.
func TestLimiterNoHeadOfLineBlocking(t *testing.T) {
	l := NewLimiter(config.Limits{PerAgentSessions: map[string]int{"a": 1}}, 0)
	defer l.Close()
	relA, _ := l.Acquire(context.Background(), "a")
	got := make(chan string, 2)
	go func() {
		rel, _ := l.Acquire(context.Background(), "a")
		got <- "a"
		rel()
	}()
	sessiontest.WaitFor(t, time.Second, "one waiter queued", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.queue) == 1 })
	relB, err := l.Acquire(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	relB()
	select {
	case <-got:
		t.Fatal("the second a ran while the first held a's only slot")
	default:
	}
	relA()
	if a := <-got; a != "a" {
		t.Fatal(a)
	}
}

func TestLimiterRateWindow(t *testing.T) {
	const window = 300 * time.Millisecond
	l := NewLimiter(config.Limits{PerAgentTurnsPerHour: map[string]int{"a": 2}}, window)
	defer l.Close()
	var starts []time.Time
	for range 5 {
		rel, err := l.Acquire(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, time.Now())
		rel()
	}
	// Any window holds at most two starts: the third waited for the first
	// to leave it.
	for i := 2; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-2]); gap < window {
			t.Errorf("starts %d and %d are %v apart, inside the %v window", i-2, i, gap, window)
		}
	}
	if why := l.Blocked("b"); why != "" {
		t.Errorf("b is not limited, but Blocked says %q", why)
	}
}

func TestLimiterSeedCountsHistory(t *testing.T) {
	l := NewLimiter(config.Limits{PerAgentTurnsPerHour: map[string]int{"a": 2}}, time.Hour)
	defer l.Close()
	now := time.Now()
	l.Seed("a", now.Add(-2*time.Hour)) // outside the window: ignored
	l.Seed("a", now.Add(-10*time.Minute))
	l.Seed("a", now.Add(-20*time.Minute))
	why := l.Blocked("a")
	if why == "" {
		t.Fatal("two starts in the last hour with a limit of 2, but a is not blocked")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want the deadline", err)
	}
	t.Log(why)
}

func TestLimiterCancelAndReload(t *testing.T) {
	l := NewLimiter(config.Limits{MaxSessions: 1}, 0)
	defer l.Close()
	rel, _ := l.Acquire(context.Background(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := l.Acquire(ctx, "a"); errc <- err }()
	sessiontest.WaitFor(t, time.Second, "one waiter queued", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.queue) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v", err)
	}
	// A reload that raises the limit admits a waiter at once.
	done := make(chan func(), 1)
	go func() { r, _ := l.Acquire(context.Background(), "b"); done <- r }()
	sessiontest.WaitFor(t, time.Second, "one waiter queued", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.queue) == 1 })
	l.SetLimits(config.Limits{MaxSessions: 2})
	select {
	case r := <-done:
		r()
	case <-time.After(time.Second):
		t.Fatal("raising max_sessions did not admit the waiter")
	}
	rel()
	if l.Running() != 0 {
		t.Fatalf("Running = %d", l.Running())
	}
}
