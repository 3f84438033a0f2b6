package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

func TestLimiterSessions(t *testing.T) {
	l := NewLimiter(config.Limits{MaxSessions: 3, PerAgentSessions: map[string]int{"a": 2}}, 0, nil, nil)
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
			rel(0)
			rel(0) // a second release is a no-op
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
	l := NewLimiter(config.Limits{PerAgentSessions: map[string]int{"a": 1}}, 0, nil, nil)
	defer l.Close()
	relA, _ := l.Acquire(context.Background(), "a")
	got := make(chan string, 2)
	go func() {
		rel, _ := l.Acquire(context.Background(), "a")
		got <- "a"
		rel(0)
	}()
	sessiontest.WaitFor(t, 5*time.Second, "one waiter queued", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.queue) == 1 })
	relB, err := l.Acquire(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	relB(0)
	select {
	case <-got:
		t.Fatal("the second a ran while the first held a's only slot")
	default:
	}
	relA(0)
	if a := <-got; a != "a" {
		t.Fatal(a)
	}
}

func TestLimiterRateWindow(t *testing.T) {
	const window = 300 * time.Millisecond
	l := NewLimiter(config.Limits{PerAgentTurnsPerHour: map[string]int{"a": 2}}, window, nil, nil)
	defer l.Close()
	var starts []time.Time
	for range 5 {
		rel, err := l.Acquire(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, time.Now())
		rel(0)
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

// The ledger is the machine's: a limiter that starts later (another
// walkie, or this one after a restart) counts the sessions already
// started, and a process's own sessions count against another's limit.
func TestLimiterCountsTheLedgersHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	lim := config.Limits{PerAgentTurnsPerHour: map[string]int{"a": 2}}
	first := NewLimiter(lim, time.Hour, Open(path), nil)
	defer first.Close()
	for range 2 {
		rel, err := first.Acquire(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		rel(0)
	}
	var told []Held
	second := NewLimiter(lim, time.Hour, Open(path), func(h Held) { told = append(told, h) })
	defer second.Close()
	why := second.Blocked("a")
	if !strings.HasPrefix(why, "held by per_agent_turns_per_hour: a started 2 sessions in the last 1h0m0s (limit 2); next at ") {
		t.Fatalf("two starts in the last hour with a limit of 2, but a second limiter says %q", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := second.Acquire(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want the deadline", err)
	}
	if len(told) != 1 || told[0].Limit != LimitAgentTurnsByHour || told[0].Until.Before(time.Now().Add(59*time.Minute)) {
		t.Errorf("told %+v, want the rate limit, until about an hour from now", told)
	}
	if rel, held, err := second.Try("b"); err != nil || held != nil {
		t.Errorf("b is not limited: %v %v", held, err)
	} else {
		rel(0)
	}
}

func TestLimiterCancelAndReload(t *testing.T) {
	l := NewLimiter(config.Limits{MaxSessions: 1}, 0, nil, nil)
	defer l.Close()
	rel, _ := l.Acquire(context.Background(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := l.Acquire(ctx, "a"); errc <- err }()
	sessiontest.WaitFor(t, 5*time.Second, "one waiter queued", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.queue) == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v", err)
	}
	// A reload that raises the limit admits a waiter at once.
	done := make(chan func(float64), 1)
	go func() { r, _ := l.Acquire(context.Background(), "b"); done <- r }()
	sessiontest.WaitFor(t, 5*time.Second, "one waiter queued", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.queue) == 1 })
	l.SetLimits(config.Limits{MaxSessions: 2})
	select {
	case r := <-done:
		r(0)
	case <-time.After(time.Second):
		t.Fatal("raising max_sessions did not admit the waiter")
	}
	rel(0)
	if l.Running() != 0 {
		t.Fatalf("Running = %d", l.Running())
	}
}

// Two limiters on one ledger are two walkies of the machine: a session
// slot one holds is the other's to wait for, and the other is woken by
// the ledger's change when it is given back, never by a timer.
func TestLimiterWaitsForAnotherProcesssSlot(t *testing.T) {
	defer func(d time.Duration) { recheck = d }(recheck)
	recheck = time.Hour
	path := filepath.Join(t.TempDir(), FileName)
	lim := config.Limits{PerAgentSessions: map[string]int{"a": 1}}
	one, other := NewLimiter(lim, 0, Open(path), nil), NewLimiter(lim, 0, Open(path), nil)
	defer one.Close()
	defer other.Close()
	rel, err := one.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := other.Acquire(context.Background(), "a")
		if err == nil {
			r(0.25)
		}
		got <- err
	}()
	sessiontest.WaitFor(t, 5*time.Second, "the other waits", func() bool { other.mu.Lock(); defer other.mu.Unlock(); return len(other.queue) == 1 })
	select {
	case err := <-got:
		t.Fatalf("the other took a's only slot while one held it (%v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	rel(1.5)
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other was not woken by the release")
	}
	b, err := Open(path).Read(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if a := b.Agents["a"]; a == nil || len(a.Starts) != 2 || len(a.Running) != 0 || a.SpentUSD != 1.75 {
		t.Errorf("the ledger after both: %+v", a)
	}
}
