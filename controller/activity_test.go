package controller

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/walkie"
)

// The activity file is written when a session starts and ends, and while
// output flows at most once a second, the last line always arriving (a
// trailing write); a run's end removes it.
func TestActivityFileThrottled(t *testing.T) {
	dir := t.TempDir()
	lock, err := walkie.TryRunLock(dir) // a reader trusts the file only while a controller holds the debate
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	var pending []func()
	a := newActivity(dir, 42, zap.NewNop())
	a.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a.after = func(d time.Duration, f func()) *time.Timer {
		mu.Lock()
		pending = append(pending, f)
		mu.Unlock()
		return time.NewTimer(time.Hour) // fired by hand below
	}
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	line := func() string {
		t.Helper()
		act, err := walkie.ReadActivity(dir)
		if err != nil || act == nil || len(act.Sessions) != 1 {
			t.Fatalf("activity: %+v %v", act, err)
		}
		return act.Sessions[0].Line
	}
	e := Event{Agent: "claude", Turn: 3, Attempt: 1, Round: 2, Started: now}
	start := e
	start.Kind = EventTurnStarted
	a.observe(start)
	if line() != "" {
		t.Errorf("a new session's line %q", line())
	}
	out := e
	out.Kind = EventOutput
	for _, l := range []string{"one", "two", "three"} {
		out.Line = l
		advance(100 * time.Millisecond)
		a.observe(out)
	}
	if got := line(); got != "" {
		t.Errorf("within a second of the last write the file already says %q", got)
	}
	if len(pending) != 1 {
		t.Fatalf("%d trailing writes scheduled, want 1", len(pending))
	}
	advance(time.Second)
	pending[0]()
	if got := line(); got != "three" {
		t.Errorf("after the trailing write: %q, want the last line", got)
	}
	advance(2 * time.Second)
	out.Line = "four"
	a.observe(out)
	if got := line(); got != "four" {
		t.Errorf("a second after the last write: %q, want it written at once", got)
	}
	done := e
	done.Kind = EventTurnRecorded
	a.observe(done)
	if act, _ := walkie.ReadActivity(dir); act != nil {
		t.Errorf("after the turn was recorded: %+v", act)
	}
	a.observe(start)
	a.close()
	if act, _ := walkie.ReadActivity(dir); act != nil {
		t.Errorf("after the run ended: %+v", act)
	}
}
