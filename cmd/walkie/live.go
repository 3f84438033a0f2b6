package main

import (
	"os"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// liveEvery is how often at most an activity change is written to the
// live view: a person reads it, an agent may change it many times a
// second.
const liveEvery = 500 * time.Millisecond

// liveView keeps .walkie/ID/live.json (walkie.Live) up to date from a
// run's events, so `walkie follow` in another terminal shows what each
// running session is doing. A session's start and end are written at
// once; activity changes at most every liveEvery, the last one always.
type liveView struct {
	dir     string
	log     *zap.Logger
	mu      sync.Mutex
	live    walkie.Live
	written time.Time
	timer   *time.Timer // a pending write of the latest activity
	closed  bool
}

func newLiveView(dir string, log *zap.Logger) *liveView {
	return &liveView{dir: dir, log: log, live: walkie.Live{ControllerPID: os.Getpid(), Sessions: []walkie.LiveSession{}}}
}

func (v *liveView) observe(e controller.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return
	}
	switch e.Kind {
	case controller.EventTurnStarted:
		v.drop(e.Agent)
		v.live.Sessions = append(v.live.Sessions, walkie.LiveSession{Turn: e.Turn, Round: e.Round, Agent: e.Agent, Attempt: e.Attempt, Started: e.Started})
		v.write()
	case controller.EventOutput:
		i := slices.IndexFunc(v.live.Sessions, func(s walkie.LiveSession) bool { return s.Agent == e.Agent })
		if i < 0 {
			v.live.Sessions = append(v.live.Sessions, walkie.LiveSession{Turn: e.Turn, Round: e.Round, Agent: e.Agent, Attempt: e.Attempt, Started: e.Started})
			i = len(v.live.Sessions) - 1
		}
		v.live.Sessions[i].Activity = e.Line
		v.soon()
	case controller.EventTurnRecorded, controller.EventDebateEnded:
		if e.Kind == controller.EventDebateEnded {
			v.live.Sessions = v.live.Sessions[:0]
		}
		v.drop(e.Agent)
		v.write()
	}
}

func (v *liveView) drop(agent string) {
	v.live.Sessions = slices.DeleteFunc(v.live.Sessions, func(s walkie.LiveSession) bool { return s.Agent == agent })
}

// soon writes now if the last write is old enough, else once it is.
func (v *liveView) soon() {
	if wait := liveEvery - time.Since(v.written); wait > 0 {
		if v.timer == nil {
			v.timer = time.AfterFunc(wait, func() {
				v.mu.Lock()
				defer v.mu.Unlock()
				v.timer = nil
				if !v.closed {
					v.write()
				}
			})
		}
		return
	}
	v.write()
}

func (v *liveView) write() {
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
	v.live.UpdatedAt = time.Now().UTC()
	v.written = time.Now()
	// The view is a courtesy to another terminal: a failure to write it
	// must not stop the debate.
	if err := walkie.WriteLive(v.dir, &v.live); err != nil {
		v.log.Warn("live view not written", zap.Error(err))
	}
}

// close stops the writes and removes the view: no session runs any more.
func (v *liveView) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	if v.timer != nil {
		v.timer.Stop()
		v.timer = nil
	}
	if err := walkie.RemoveLive(v.dir); err != nil {
		v.log.Warn("live view not removed", zap.Error(err))
	}
}
