package daemon

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/walkie-sh/walkie/config"
)

// Limiter hands out session slots under the configured limits: sessions
// at once in total and per agent, and sessions started per agent within a
// rolling window (an hour, outside tests). Waiters are served first come,
// first served, except that one blocked by its own agent's limit does not
// hold up another agent's waiter behind it.
//
// Nothing polls: a release re-examines the queue, and a waiter blocked
// only by the rate limit is woken by one timer set for the moment the
// oldest start in its window expires.
type Limiter struct {
	mu       sync.Mutex
	limits   config.Limits
	window   time.Duration
	now      func() time.Time
	running  int
	perAgent map[string]int
	starts   map[string][]time.Time // per agent, ascending, at most one window old
	queue    []*waiter
	timer    *time.Timer
}

type waiter struct {
	agent   string
	ready   chan struct{} // closed when granted
	granted bool
	at      time.Time // when it was granted: its entry in starts
}

// NewLimiter returns a limiter for lim; window is the rate limit's window
// (0 means an hour).
func NewLimiter(lim config.Limits, window time.Duration) *Limiter {
	if window <= 0 {
		window = time.Hour
	}
	return &Limiter{limits: lim, window: window, now: time.Now, perAgent: map[string]int{}, starts: map[string][]time.Time{}}
}

// Acquire waits for a slot for agent. The caller must call release once
// the session has ended. On ctx's end it gives up, and a slot granted in
// the same instant is handed back, start and all.
func (l *Limiter) Acquire(ctx context.Context, agent string) (release func(), err error) {
	w := &waiter{agent: agent, ready: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, w)
	l.grantLocked()
	l.mu.Unlock()
	select {
	case <-w.ready:
		return l.releaser(agent), nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.granted {
		// Granted while ctx ended: no session will start, so the slot and
		// the start it was charged with go back.
		l.freeLocked(agent)
		l.forgetStartLocked(agent, w.at)
	} else {
		l.queue = slices.DeleteFunc(l.queue, func(x *waiter) bool { return x == w })
	}
	l.grantLocked()
	return nil, ctx.Err()
}

func (l *Limiter) releaser(agent string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.freeLocked(agent)
			l.grantLocked()
		})
	}
}

func (l *Limiter) freeLocked(agent string) {
	l.running--
	if l.perAgent[agent]--; l.perAgent[agent] <= 0 {
		delete(l.perAgent, agent)
	}
}

func (l *Limiter) forgetStartLocked(agent string, at time.Time) {
	s := l.starts[agent]
	if i := slices.IndexFunc(s, func(t time.Time) bool { return t.Equal(at) }); i >= 0 {
		l.starts[agent] = slices.Delete(s, i, i+1)
	}
}

// SetLimits replaces the limits (a config reload). The rate history is
// kept; waiters that the new limits admit go at once.
func (l *Limiter) SetLimits(lim config.Limits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits = lim
	l.grantLocked()
}

// Seed records sessions started before this process, from the turn logs,
// so a restart does not reset the rate limit. Starts outside the window
// are ignored.
func (l *Limiter) Seed(agent string, started time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !started.After(l.now().Add(-l.window)) {
		return
	}
	s := l.starts[agent]
	i, _ := slices.BinarySearchFunc(s, started, func(a, b time.Time) int { return a.Compare(b) })
	l.starts[agent] = slices.Insert(s, i, started)
}

// Running is the number of slots held.
func (l *Limiter) Running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.running
}

// Blocked says in one line why a session for agent cannot start now, or
// "" if it could.
func (l *Limiter) Blocked(agent string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.pruneLocked(now)
	ok, why, _ := l.admitLocked(agent, now)
	if ok {
		return ""
	}
	return why
}

// grantLocked admits every waiter the limits allow, in queue order, and
// arms the timer for the earliest rate-limited one.
func (l *Limiter) grantLocked() {
	now := l.now()
	l.pruneLocked(now)
	var wake time.Time
	kept := l.queue[:0]
	for _, w := range l.queue {
		ok, _, until := l.admitLocked(w.agent, now)
		if !ok {
			if !until.IsZero() && (wake.IsZero() || until.Before(wake)) {
				wake = until
			}
			kept = append(kept, w)
			continue
		}
		l.running++
		l.perAgent[w.agent]++
		l.starts[w.agent] = append(l.starts[w.agent], now)
		w.granted, w.at = true, now
		close(w.ready)
	}
	clear(l.queue[len(kept):])
	l.queue = kept
	l.armLocked(wake, now)
}

// admitLocked checks one agent against the limits. until is when the rate
// limit lets it go, when that is what stops it.
func (l *Limiter) admitLocked(agent string, now time.Time) (ok bool, why string, until time.Time) {
	if max := l.limits.MaxSessions; max > 0 && l.running >= max {
		return false, fmt.Sprintf("waiting for a session slot (max_sessions %d)", max), time.Time{}
	}
	if max := l.limits.PerAgentSessions[agent]; max > 0 && l.perAgent[agent] >= max {
		return false, fmt.Sprintf("waiting for a %s slot (per_agent_sessions %d)", agent, max), time.Time{}
	}
	if rate := l.limits.PerAgentTurnsPerHour[agent]; rate > 0 {
		if s := l.starts[agent]; len(s) >= rate {
			// The window must lose len(s)-rate+1 starts; the last of those
			// to go is s[len(s)-rate].
			until = s[len(s)-rate].Add(l.window)
			return false, fmt.Sprintf("rate-limited: %d %s sessions in the last %s; next at %s", len(s), agent, l.window,
				until.Local().Format(time.TimeOnly)), until
		}
	}
	return true, "", time.Time{}
}

func (l *Limiter) pruneLocked(now time.Time) {
	cut := now.Add(-l.window)
	for agent, s := range l.starts {
		i := 0
		for i < len(s) && !s[i].After(cut) {
			i++
		}
		if i == len(s) {
			delete(l.starts, agent)
		} else if i > 0 {
			l.starts[agent] = slices.Delete(s, 0, i)
		}
	}
}

func (l *Limiter) armLocked(wake, now time.Time) {
	if wake.IsZero() {
		if l.timer != nil {
			l.timer.Stop()
		}
		return
	}
	// A millisecond late rather than early: at exactly `wake` the start
	// is still inside the window.
	d := wake.Sub(now) + time.Millisecond
	if l.timer == nil {
		l.timer = time.AfterFunc(d, l.onTimer)
		return
	}
	l.timer.Reset(d)
}

func (l *Limiter) onTimer() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.grantLocked()
}

// Close stops the timer.
func (l *Limiter) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
}
