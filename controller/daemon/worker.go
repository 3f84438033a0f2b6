package daemon

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/fleet"
	"github.com/walkie-sh/walkie/controller/notify"
	"github.com/walkie-sh/walkie/walkie"
)

// A worker runs one debate. It holds no state that matters across a
// restart: each pass reads the record and the state and decides.
type worker struct {
	d    *Daemon
	file string
	poke chan struct{} // buffered 1: "something changed, look again"
	log  *zap.Logger
	// ioDelay is the backoff while the record cannot be read for a
	// transient reason (the loop's goroutine alone uses it).
	ioDelay time.Duration
	// runningFromFile: view.Running was read from another controller's
	// activity file (not set by this daemon's events).
	runningFromFile bool
	// parked is how the debate stood when a run failed on bad input; it
	// waits until that changes. Owned by the loop's goroutine.
	parked *parkedLook

	mu         sync.Mutex
	view       DebateView
	running    bool   // inside controller.Run
	queuedFor  string // the agent whose slot it is waiting for
	lastStatus string // for debate-ended events the controller did not send
	lastErr    string // the last error logged, so a repeated one is logged once
	// toldWaiting is the turn whose person the sinks were last told it
	// is theirs (a waiting event), so each turn is told once.
	toldWaiting int
}

// DebateView is one debate as /api/debates and the page show it.
type DebateView = fleet.Debate

// RunningView is the session of the turn in progress.
type RunningView = fleet.Running

func newWorker(d *Daemon, file string) *worker {
	return &worker{d: d, file: file, poke: make(chan struct{}, 1), log: d.log.With(zap.String("file", file)),
		view: DebateView{File: file, Key: walkie.Key(file)}}
}

// wake makes the worker look again; it never blocks.
func (w *worker) wake() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

func (w *worker) busy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running
}

// snapshot is the worker's view for the API, with the live parts filled in.
func (w *worker) snapshot(now time.Time) DebateView {
	w.mu.Lock()
	v := w.view
	if v.Running != nil {
		r := *v.Running
		r.ElapsedS = now.Sub(r.Started).Round(100 * time.Millisecond).Seconds()
		v.Running = &r
	}
	queued := w.queuedFor
	w.mu.Unlock()
	if queued != "" && v.Running == nil {
		if why := w.d.limits.Blocked(queued); why != "" {
			v.Waiting = why
		}
	}
	return v
}

type action int

const (
	actWait action = iota
	actRun
	actGone
)

// Pauses between passes that found nothing to do but would find
// something without an event: another controller holding the debate, or
// an error that is not the record's fault.
const (
	minErrorDelay = time.Second
	maxErrorDelay = 5 * time.Minute
	maxLockDelay  = 30 * time.Second
)

var (
	errNotRunnable = errors.New("the debate stopped being runnable while waiting for a slot")
	errDraining    = errors.New("the daemon is stopping")
)

// loop is the worker: look, act, sleep until something changes.
func (w *worker) loop() {
	var errDelay, lockDelay time.Duration
	for {
		select {
		case <-w.d.draining:
			return
		default:
		}
		act, recheck := w.check(&lockDelay)
		var pause time.Duration
		switch act {
		case actGone:
			if w.d.retire(w) {
				return
			}
			continue
		case actRun:
			attempts, err := w.runTurn()
			// Copy the new entry now, even if the daemon is stopping:
			// the next look may never come in this process.
			w.copyNew()
			switch {
			case err == nil:
				errDelay = 0
				w.setError("")
				if attempts > 0 {
					continue
				}
				// The controller found nothing to do although the check
				// did: wait for a change rather than ask again at once.
			case errors.Is(err, errDraining), w.d.runCtx.Err() != nil:
				return
			case errors.Is(err, errNotRunnable):
				continue
			case errors.Is(err, walkie.ErrLocked):
				lockDelay = nextDelay(lockDelay, maxLockDelay)
				recheck = lockDelay
			case errors.Is(err, controller.ErrBadInput) && !transient(err):
				// The record, the state or the config must change first;
				// an event will say when. The run's own writes wake us
				// too, so the debate is parked on how it stands now, and
				// only a change of that brings it back.
				w.setError(err.Error())
				w.parked = w.parkedLook()
			default:
				errDelay = nextDelay(errDelay, maxErrorDelay)
				w.setError(err.Error())
				recheck = errDelay
			}
		}
		if !w.sleep(pause, recheck) {
			return
		}
	}
}

func nextDelay(d, max time.Duration) time.Duration {
	if d == 0 {
		return minErrorDelay
	}
	return min(2*d, max)
}

// sleep waits at least pause, then for a wake-up or, if recheck is set,
// that long. It returns false when the daemon is stopping.
func (w *worker) sleep(pause, recheck time.Duration) bool {
	if pause > 0 {
		t := time.NewTimer(pause)
		select {
		case <-w.d.draining:
			t.Stop()
			return false
		case <-t.C:
		}
	}
	var timeout <-chan time.Time
	if recheck > 0 {
		t := time.NewTimer(recheck)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.d.draining:
		return false
	case <-w.poke:
	case <-timeout:
	}
	return true
}

// check reads the record and the state and says what to do: what
// controller.Next decides, with the daemon's own bookkeeping around it.
func (w *worker) check(lockDelay *time.Duration) (action, time.Duration) {
	if fi, err := os.Lstat(w.file); errors.Is(err, fs.ErrNotExist) {
		return actGone, 0
	} else if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		w.d.skipLink(w.file)
		return actGone, 0
	}
	doc, err := walkie.Load(w.file)
	if err != nil {
		return w.loadFailed(err)
	}
	dir := walkie.StateDir(w.file, doc.Meta.ID)
	w.d.register(w, dir)
	st, err := walkie.LoadState(dir)
	if err != nil {
		return w.loadFailed(err)
	}
	// A Temporal home (o.Run set) leaves an attempt running while its
	// turn runs on a worker, holding no lock: that attempt is the
	// workflow's to settle, never a dead controller's to recover.
	if st.Running != nil && w.d.o.Run == nil && !walkie.ControllerRunning(dir) {
		if doc, st, err = w.recoverLeft(doc, st); err != nil {
			return w.loadFailed(err)
		}
	}
	w.ioDelay = 0
	at, err := controller.ReadStanding(doc, controller.StandingOptions{Config: w.d.cfg.Load(), Registry: w.d.o.Registry})
	if err != nil {
		return w.loadFailed(err)
	}
	dec := at.Decision
	var running *RunningView
	if dec.Action == controller.ActHeld {
		// Another controller runs it: the page shows what its session
		// does from the activity file that controller keeps.
		running = fleet.ReadRunning(dir, time.Now())
	}
	w.mu.Lock()
	fleet.Fill(&w.view, &at)
	w.view.RunBy = ""
	if dec.Action == controller.ActHeld {
		w.view.RunBy = at.Controller.String()
	}
	// The running session is the activity file's while another controller
	// holds the debate; otherwise this daemon's own events set it (a
	// Temporal home's heartbeats among them), and a look must not undo them.
	switch {
	case running != nil:
		w.view.Running, w.runningFromFile = running, true
	case w.runningFromFile:
		w.view.Running, w.runningFromFile = nil, false
	}
	ended := w.lastStatus == walkie.StatusOpen && dec.Status != walkie.StatusOpen && !dec.Record
	w.lastStatus = dec.Status
	w.mu.Unlock()
	if ended {
		// Ended without a controller noticing (halted while waiting,
		// converged by posts from live parties): say so once.
		w.observe(controller.Event{Kind: controller.EventDebateEnded, Debate: doc.Meta.ID, File: w.file, Status: dec.Status, Line: at.Reason})
	}
	w.copyNew()
	// The page reads the views once the worker has set them (below).
	defer w.d.page.Changed()
	if w.parked != nil {
		if *w.parked == w.parkedLookOf(doc, st) && dec.Action == controller.ActRun {
			w.setError(w.lastErr) // still why it cannot run
			return actWait, 0
		}
		w.parked = nil
	}
	if dec.Action != controller.ActEnd && !walkie.ActsOn(w.file) {
		// A channel's threads wait their turn: only the one its doorbell
		// names is run (docs/review-threads.md).
		w.setWaiting("not the open thread of its channel")
		return actWait, 0
	}
	switch dec.Action {
	case controller.ActRun:
		*lockDelay = 0
		return actRun, 0
	case controller.ActEnd:
		if dec.Record {
			// An end only the loop writes (the budget is spent).
			return actRun, 0
		}
		w.setWaiting("")
	case controller.ActHeld:
		// Another controller (walkie auto, turn or watch) runs it now.
		// Its lock leaves no event when it is released, so look again
		// after a while.
		*lockDelay = nextDelay(*lockDelay, maxLockDelay)
		w.setWaiting(at.Waiting)
		return actWait, *lockDelay
	default:
		w.setWaiting(dec.Why)
		if dec.Action == controller.ActWait && dec.Person && w.toldWaiting != dec.Turn {
			// A person's turn: told once, as walkie auto tells it, so a
			// Telegram chat can answer it.
			w.toldWaiting = dec.Turn
			w.observe(controller.Event{Kind: controller.EventWaiting, Debate: doc.Meta.ID, File: w.file, Turn: dec.Turn, Round: dec.Round,
				Agent: dec.Participant, Line: dec.Why})
		}
	}
	return actWait, 0
}

// recoverLeft finishes the attempt a dead controller left running, and
// reads the debate again. Here, not only when the next turn runs: the
// attempt may have ended the debate, or handed it to a person, and no
// turn follows it.
func (w *worker) recoverLeft(doc *walkie.Doc, st *walkie.State) (*walkie.Doc, *walkie.State, error) {
	done, err := controller.Recover(controller.Options{File: w.file, Config: w.d.cfg.Load(), Log: w.d.log, Observe: w.observe})
	if err != nil || !done {
		return doc, st, err
	}
	if doc, err = walkie.Load(w.file); err != nil {
		return nil, nil, err
	}
	st, err = walkie.LoadState(walkie.StateDir(w.file, doc.Meta.ID))
	return doc, st, err
}

// copyNew sends the supervisor a copy of every turn recorded since the
// last copy, when the debate (walkie notify --copy) or the config asks.
func (w *worker) copyNew() {
	if n := w.d.notif.Load(); n.Enabled() && notify.CopyWanted(w.file, n.CopySupervisor()) {
		if _, err := notify.CopyEntries(w.file, w.observe); err != nil {
			w.log.Warn("copy of new entries for the supervisor failed", zap.Error(err))
		}
	}
}

func (w *worker) setWaiting(why string) {
	defer w.d.page.Changed()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.view.Waiting = why
}

// setError records an error for the API and logs it once.
func (w *worker) setError(msg string) {
	w.mu.Lock()
	w.view.Error = msg
	w.d.page.Changed()
	repeated := msg == w.lastErr
	w.lastErr = msg
	w.mu.Unlock()
	if msg != "" && !repeated {
		w.log.Warn("debate cannot go on until something changes", zap.String("error", msg))
	}
}

// runTurn runs the next turn (with its retries) and returns how many
// attempts were made.
func (w *worker) runTurn() (int, error) {
	w.mu.Lock()
	w.running = true
	w.view.Waiting = ""
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.running, w.view.Running, w.queuedFor = false, nil, ""
		w.mu.Unlock()
	}()
	opts := controller.Options{File: w.file, Config: w.d.cfg.Load(), Once: true, Log: w.d.log, Observe: w.observe, Acquire: w.acquire}
	if w.d.o.Run == nil {
		sum, err := controller.Run(w.d.runCtx, opts)
		return len(sum.Attempts), err
	}
	ctx, cancel := context.WithCancel(w.d.runCtx)
	defer cancel()
	go func() {
		select {
		case <-w.d.draining:
			cancel()
		case <-ctx.Done():
		}
	}()
	sum, err := w.d.o.Run(ctx, opts)
	if err != nil && ctx.Err() != nil {
		err = errDraining
	}
	return len(sum.Attempts), err
}

// acquire waits for a session slot. While it waits it still listens to
// the debate: a halt (or any status a person sets) gives the slot up
// before a session is wasted on it, and so does the daemon stopping.
func (w *worker) acquire(ctx context.Context, agent string) (func(usd float64), error) {
	w.mu.Lock()
	w.queuedFor = agent
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.queuedFor = ""
		w.mu.Unlock()
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for {
			select {
			case <-stop:
				return
			case <-w.d.draining:
				cancel(errDraining)
				return
			case <-w.poke:
				if !w.stillRunnable() {
					cancel(errNotRunnable)
					return
				}
			}
		}
	}()
	release, err := w.d.limits.Acquire(ctx, agent)
	close(stop)
	<-watching
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return nil, cause
		}
		return nil, err
	}
	return release, nil
}

func (w *worker) stillRunnable() bool {
	meta, err := walkie.ReadMeta(w.file)
	if err != nil {
		return false
	}
	st, err := walkie.LoadState(walkie.StateDir(w.file, meta.ID))
	return err == nil && st.Status == ""
}

// observe takes the controller's events: the live view, metrics, and
// notifications. It must return quickly (the controller waits for it).
func (w *worker) observe(e controller.Event) {
	w.mu.Lock()
	switch e.Kind {
	case controller.EventTurnStarted:
		w.view.Running = &RunningView{Agent: e.Agent, Turn: e.Turn, Attempt: e.Attempt, Started: e.Started}
		w.view.Waiting = ""
	case controller.EventOutput:
		if w.view.Running != nil {
			w.view.Running.LastLine = walkie.Clip(e.Line, 200)
		}
	case controller.EventTurnRecorded:
		w.view.Running = nil
	case controller.EventDebateEnded:
		w.lastStatus = e.Status
	}
	w.mu.Unlock()
	w.d.page.Changed()
	switch e.Kind {
	case controller.EventOutput:
		return
	case controller.EventTurnRecorded:
		w.d.metrics.turnRecorded(e.Record)
	case controller.EventNote:
		w.log.Info("note", zap.String("note", e.Line))
		return
	}
	notify.Observer(w.d.notif.Load())(e)
}

// parkedLook is what must change before a debate parked on bad input runs
// again: its record (a post, a repair), its control state (resume, extend,
// halt) or the configuration (a reload). Files the run writes for itself
// (round-table results, the turn log, cost) are not part of it.
type parkedLook struct {
	hash   string
	seq    int
	status string
	extra  int
	cfg    *config.Config
}

func (w *worker) parkedLookOf(doc *walkie.Doc, st *walkie.State) parkedLook {
	p := doc.Progress()
	return parkedLook{hash: p.Hash, seq: p.Seq, status: st.Status, extra: st.ExtraRounds, cfg: w.d.cfg.Load()}
}

// parkedLook reads how the debate stands now; nil when it cannot be read
// (then nothing is parked, and the next look says why).
func (w *worker) parkedLook() *parkedLook {
	doc, err := walkie.Load(w.file)
	if err != nil {
		return nil
	}
	st, err := walkie.LoadState(walkie.StateDir(w.file, doc.Meta.ID))
	if err != nil {
		return nil
	}
	s := w.parkedLookOf(doc, st)
	return &s
}
