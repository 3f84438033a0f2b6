package controller

import (
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/walkie"
)

// activityEvery is the least time between two writes of activity.json
// while output flows: a page reading it is a second late at most, and an
// agent printing a thousand lines a second costs one write.
const activityEvery = time.Second

// activity keeps .walkie/ID/activity.json: what this run's sessions are
// doing, for a page that is not in this process. It is fed the run's
// events, whether or not anyone observes them.
type activity struct {
	dir string
	pid int
	log *zap.Logger
	// now and after are time.Now and time.AfterFunc (tests replace them).
	now   func() time.Time
	after func(time.Duration, func()) *time.Timer

	mu       sync.Mutex
	sessions []walkie.SessionActivity
	wrote    time.Time   // last write
	trailing *time.Timer // a write due once activityEvery has passed
	closed   bool
}

func newActivity(dir string, pid int, log *zap.Logger) *activity {
	return &activity{dir: dir, pid: pid, log: log, now: time.Now, after: time.AfterFunc}
}

// observe updates the sessions from one event: a started session is
// written at once, and so is an ended one; output is written at most once
// a second, the last line always (a trailing write).
func (a *activity) observe(e Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	i := slices.IndexFunc(a.sessions, func(s walkie.SessionActivity) bool {
		return s.Agent == e.Agent && s.Turn == e.Turn && s.Attempt == e.Attempt
	})
	switch e.Kind {
	case EventTurnStarted:
		s := walkie.SessionActivity{Agent: e.Agent, Turn: e.Turn, Round: e.Round, Attempt: e.Attempt, Started: e.Started}
		if i >= 0 {
			a.sessions[i] = s
		} else {
			a.sessions = append(a.sessions, s)
		}
		a.writeLocked()
	case EventOutput:
		if i < 0 {
			return
		}
		a.sessions[i].Line = walkie.Clip(e.Line, walkie.MaxActivityLine)
		if wait := activityEvery - a.now().Sub(a.wrote); wait > 0 {
			if a.trailing == nil {
				a.trailing = a.after(wait, a.flush)
			}
			return
		}
		a.writeLocked()
	case EventTurnRecorded:
		if i < 0 {
			return
		}
		a.sessions = slices.Delete(a.sessions, i, i+1)
		a.writeLocked()
	}
}

func (a *activity) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trailing = nil
	if !a.closed {
		a.writeLocked()
	}
}

// writeLocked writes the sessions, or removes the file when none runs.
func (a *activity) writeLocked() {
	if a.trailing != nil {
		a.trailing.Stop()
		a.trailing = nil
	}
	a.wrote = a.now()
	var err error
	if len(a.sessions) == 0 {
		err = walkie.RemoveActivity(a.dir)
	} else {
		err = walkie.WriteActivity(a.dir, &walkie.Activity{PID: a.pid, Sessions: a.sessions, UpdatedAt: a.wrote.UTC()})
	}
	if err != nil {
		// Only a page reads it: the run goes on.
		a.log.Debug("activity file not written", zap.Error(err))
	}
}

// close removes the file: nothing of this run is running any more.
func (a *activity) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	if a.trailing != nil {
		a.trailing.Stop()
		a.trailing = nil
	}
	if err := walkie.RemoveActivity(a.dir); err != nil {
		a.log.Debug("activity file not removed", zap.Error(err))
	}
}
