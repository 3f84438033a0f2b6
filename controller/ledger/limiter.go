package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/walkie-sh/walkie/config"
)

// recheck is how soon a waiter held by another process's sessions looks
// at the ledger again when nothing has woken it: the one case nothing can
// announce, a holder that died without giving its slot back. (A variable
// only so that a test can show the file's change is what wakes it.)
var recheck = 10 * time.Second

// Limiter hands out one process's session slots under the limits:
// sessions at once in this process (max_sessions), and per agent, on the
// machine's ledger, sessions at once, sessions started within a rolling
// window (an hour, outside tests) and the day's spending. Waiters are
// served first come, first served, except that one held by its own
// agent's limit does not hold up another agent's waiter behind it.
//
// Nothing polls: a release here re-examines the queue, a change of the
// ledger file by another process wakes it, and a waiter held only until a
// known time (the rate window, the day) is woken by one timer set for the
// earliest such moment. The exception is a slot another process holds:
// the queue looks again after 10 s, in case that process died.
type Limiter struct {
	mu      sync.Mutex
	limits  config.Limits
	window  time.Duration
	now     func() time.Time
	ledger  *Ledger
	running int
	queue   []*waiter
	timer   *time.Timer
	watcher *fsnotify.Watcher
	closed  bool
	// told is called, outside nothing but mu, once for each new reason a
	// waiter is held: the run says which limit holds it and until when.
	told func(Held)
}

type waiter struct {
	agent   string
	ready   chan struct{} // closed when granted, or failed
	granted bool
	hold    Hold
	err     error // the ledger could not be read or written
	held    string
}

// NewLimiter returns a limiter for lim over the ledger lg; window is the
// rate limit's window (0 means an hour). told, when set, hears each
// waiter's reason to wait when it changes.
func NewLimiter(lim config.Limits, window time.Duration, lg *Ledger, told func(Held)) *Limiter {
	if window <= 0 {
		window = time.Hour
	}
	if lg == nil {
		lg = Open("")
	}
	return &Limiter{limits: lim, window: window, now: time.Now, ledger: lg, told: told}
}

// Acquire waits for a slot for agent. The caller must call release, with
// what the session cost (0 when unknown), once it has ended. On ctx's
// end it gives up, and a slot granted in the same instant is handed back,
// start and all.
func (l *Limiter) Acquire(ctx context.Context, agent string) (release func(usd float64), err error) {
	w := &waiter{agent: agent, ready: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, w)
	l.grantLocked()
	l.mu.Unlock()
	select {
	case <-w.ready:
		if w.err != nil {
			return nil, w.err
		}
		return l.releaser(agent, w.hold), nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case w.granted:
		// Granted while ctx ended: no session will start, so the slot and
		// the start it was charged with go back.
		l.running--
		_ = l.ledger.update(l.now(), l.window, true, func(b *Book) bool {
			b.Forget(agent, w.hold)
			return true
		})
	case w.err == nil:
		l.queue = slices.DeleteFunc(l.queue, func(x *waiter) bool { return x == w })
	}
	l.grantLocked()
	return nil, ctx.Err()
}

// Try takes a slot for agent if the limits allow one now, without
// waiting: a cron tick's way. held says which limit refuses it.
func (l *Limiter) Try(agent string) (release func(usd float64), held *Held, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var h Hold
	err = l.ledger.update(l.now(), l.window, true, func(b *Book) bool {
		if held = l.admit(b, agent, l.now()); held != nil {
			return false
		}
		h = b.Take(agent, l.now(), l.ledger.holder, newID())
		return true
	})
	if err != nil || held != nil {
		return nil, held, err
	}
	l.running++
	return l.releaser(agent, h), nil, nil
}

func (l *Limiter) releaser(agent string, h Hold) func(usd float64) {
	var once sync.Once
	return func(usd float64) {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.running--
			// A release that cannot be written costs the ledger that
			// session's slot until this process ends (its hold dies
			// with it); the session itself is over either way.
			_ = l.ledger.update(l.now(), l.window, true, func(b *Book) bool {
				b.Give(agent, h, usd, l.now())
				return true
			})
			l.grantLocked()
		})
	}
}

// SetLimits replaces the limits (a config reload); waiters that the new
// limits admit go at once.
func (l *Limiter) SetLimits(lim config.Limits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits = lim
	l.grantLocked()
}

// Running is the number of slots this process holds.
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
	var why string
	_ = l.ledger.update(l.now(), l.window, false, func(b *Book) bool {
		if h := l.admit(b, agent, l.now()); h != nil {
			why = h.Why
		}
		return false
	})
	return why
}

// admit checks agent against the limits: this process's, then the
// ledger's.
func (l *Limiter) admit(b *Book, agent string, now time.Time) *Held {
	if n := l.limits.MaxSessions; n > 0 && l.running >= n {
		return &Held{Agent: agent, Limit: LimitSessions, Why: fmt.Sprintf("waiting for a session slot (max_sessions %d)", n)}
	}
	return b.Admit(agent, l.limits, now, l.window)
}

// grantLocked admits every waiter the limits allow, in queue order, in
// one look at the ledger, and arms the wake-ups for those left.
func (l *Limiter) grantLocked() {
	if l.closed || len(l.queue) == 0 {
		l.armLocked(time.Time{})
		return
	}
	now := l.now()
	var wake time.Time
	var tell []Held
	err := l.ledger.update(now, l.window, true, func(b *Book) bool {
		changed := false
		kept := l.queue[:0]
		for _, w := range l.queue {
			if held := l.admit(b, w.agent, now); held != nil {
				until := held.Until
				if until.IsZero() && held.Limit == LimitAgentSessions {
					until = now.Add(recheck) // another process may hold it
				}
				if !until.IsZero() && (wake.IsZero() || until.Before(wake)) {
					wake = until
				}
				if held.Why != w.held {
					w.held = held.Why
					tell = append(tell, *held)
				}
				kept = append(kept, w)
				continue
			}
			l.running++
			w.hold, w.granted, changed = b.Take(w.agent, now, l.ledger.holder, newID()), true, true
			close(w.ready)
		}
		clear(l.queue[len(kept):])
		l.queue = kept
		return changed
	})
	if err != nil {
		// Nobody can be admitted by a ledger that cannot be read: each
		// waiter gets the error, which names the file and the fix.
		for _, w := range l.queue {
			if !w.granted {
				w.err = err
				close(w.ready)
			}
		}
		l.queue = nil
		return
	}
	for _, h := range tell {
		if l.told != nil {
			l.told(h)
		}
	}
	l.armLocked(wake)
	if len(l.queue) > 0 {
		l.watchLocked()
	}
}

func (l *Limiter) armLocked(wake time.Time) {
	if wake.IsZero() {
		if l.timer != nil {
			l.timer.Stop()
		}
		return
	}
	// A millisecond late rather than early: at exactly `wake` the start
	// is still inside the window.
	d := wake.Sub(l.now()) + time.Millisecond
	if l.timer == nil {
		l.timer = time.AfterFunc(d, l.regrant)
		return
	}
	l.timer.Reset(d)
}

// watchLocked follows the ledger file, once a waiter waits, so that
// another process's release wakes the queue.
func (l *Limiter) watchLocked() {
	if l.watcher != nil || l.ledger.path == "" {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return // the recheck timer still comes
	}
	if err := w.Add(filepath.Dir(l.ledger.path)); err != nil {
		_ = w.Close()
		return
	}
	l.watcher = w
	go func() {
		for {
			select {
			case e, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Base(e.Name) == filepath.Base(l.ledger.path) {
					l.regrant()
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
}

func (l *Limiter) regrant() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.grantLocked()
}

// Close stops the timer and the watch.
func (l *Limiter) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.watcher != nil {
		_ = l.watcher.Close()
		l.watcher = nil
	}
}
