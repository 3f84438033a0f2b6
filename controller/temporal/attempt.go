package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
)

// What every activity a worker runs shares: the version and store check,
// a directory of the attempt's own, the session's note for a worker that
// dies, its halt and interrupt, and the heartbeats.

// hello checks what the home says at the start of an activity: the same
// protocol and build as this worker's, and a blob store this worker
// reaches. A mismatch is bad input no other worker of this version fixes.
func (w *Worker) hello(ctx context.Context, home Hello) error {
	own, err := w.carry.own(ctx)
	if home.Protocol != own.Protocol || home.Build != own.Build {
		return w.badInput(fmt.Errorf("the home runs %s and this worker %s: run the same walkie on the home and on every worker (walkie --version says which)", home, own))
	}
	if home.Store != "" && err != nil {
		return fmt.Errorf("worker %s: %w", w.identity, err) // retried: the home may be starting
	}
	if home.Store != "" && home.Store != own.Store {
		return w.badInput(fmt.Errorf("the home keeps what travels by reference in blob store %s, and this worker's --blobs %s is store %s: give the worker --blobs http://HOME:PORT (the home's --blob-listen) or the directory the home's --blobs names, shared",
			home.Store, w.o.Blobs.Where(), own.Store))
	}
	return nil
}

// checkWorker checks a worker's result at home, for a worker that did
// not check the home (one older than the check).
func (h *Home) checkWorker(worker string, r Hello) error {
	own := h.carry.says()
	if r.Protocol != own.Protocol || r.Build != own.Build {
		who := r.String()
		if r.Protocol == 0 {
			who = "a walkie older than protocol 2, which says no version"
		}
		return engine.BadInput(fmt.Errorf("worker %s runs %s and the home %s: its result is not recorded; run the same walkie on the home and on every worker", worker, who, own))
	}
	return nil
}

// sessionFile, in an attempt's directory, names the running session, so a
// worker that died leaves enough for the next start to end what the
// session left behind: its processes, private HOME and TMPDIR
// (session.Sweep), its process group (session.KillStale) and its sandbox.
const sessionFile = "session.json"

// sessionNote is what sessionFile holds.
type sessionNote struct {
	session.ProcIdentity
	Session string `json:"session"`
	Sandbox string `json:"sandbox,omitempty"`
}

// attempt is one activity's run on this worker.
type attempt struct {
	w   *Worker
	dir string // the attempt's directory under the worker's --dir
	// control is the file the engine watches for a halt; halted says it
	// was one.
	control string
	halted  atomic.Bool
	line    atomic.Value
	// ctx is the session's: it outlives the activity's on purpose, as it
	// outlives the loop's, so the session is ended and the attempt
	// reported rather than dropped. interrupt ends it.
	ctx       context.Context
	interrupt context.CancelFunc
	// transcript is the raw transcript, whose size the heartbeats report.
	transcript string
	stopBeats  func()
	note       sessionNote
}

// newAttempt makes dir and starts heartbeating; close ends it all.
func (w *Worker) newAttempt(ctx context.Context, dir, transcript string) (*attempt, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("attempt directory: %w", err)
	}
	a := &attempt{w: w, dir: dir, control: filepath.Join(dir, "control"), transcript: transcript}
	if err := os.WriteFile(a.control, nil, 0o644); err != nil {
		return nil, err
	}
	a.line.Store("")
	a.ctx, a.interrupt = context.WithCancel(context.WithoutCancel(ctx))
	watching := make(chan struct{})
	go func() {
		select {
		case <-watching:
			return
		case <-ctx.Done():
		}
		if w.stopping.Err() != nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			a.interrupt() // the worker is stopping, or the server gave up on it
			return
		}
		// The workflow cancels a session only for a halt: the engine sees
		// it through the control file, as it sees the log at home.
		a.halted.Store(true)
		_ = os.WriteFile(a.control, []byte("halted\n"), 0o644)
	}()
	beating, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beating)
		heartbeat(ctx, stop, a.progress)
	}()
	// No heartbeat may race the activity's return: the SDK cancels its
	// context then, and the heartbeat would fail.
	a.stopBeats = sync.OnceFunc(func() {
		close(stop)
		<-beating
		close(watching)
	})
	return a, nil
}

func (a *attempt) progress() Progress {
	var n int64
	if fi, err := os.Stat(a.transcript); err == nil {
		n = fi.Size()
	}
	return Progress{Worker: a.w.identity, Bytes: n, Line: a.line.Load().(string)}
}

// close stops the heartbeats and forgets the session: it is over.
func (a *attempt) close() {
	a.stopBeats()
	a.interrupt()
	_ = os.Remove(filepath.Join(a.dir, sessionFile))
}

// starting notes the session before it starts, by its id (and the sandbox
// it runs in): a worker killed before it learns the pid leaves enough to
// end it.
func (a *attempt) starting(id, sandbox string) error {
	a.note = sessionNote{Session: id, Sandbox: sandbox}
	return a.writeNote()
}

// started adds the session's process identity to the note.
func (a *attempt) started(s *session.Session) {
	id, err := session.Identify(s.Pid())
	if err != nil {
		a.w.log.Warn("cannot identify the session's process", zap.Int("pid", s.Pid()), zap.Error(err))
		return
	}
	a.note.ProcIdentity = id
	if err := a.writeNote(); err != nil {
		a.w.log.Warn("cannot record the session's process", zap.Error(err))
	}
}

func (a *attempt) writeNote() error {
	b, _ := json.Marshal(a.note)
	if err := os.WriteFile(filepath.Join(a.dir, sessionFile), b, 0o644); err != nil {
		return fmt.Errorf("note the session: %w", err)
	}
	return nil
}

// heartbeat reports progress every heartbeatEvery until done closes: a
// worker that stops heartbeating is lost, and its turn goes to another.
// Each heartbeat is also how a cancel reaches the activity.
func heartbeat(ctx context.Context, done <-chan struct{}, progress func() Progress) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		activity.RecordHeartbeat(ctx, progress())
		select {
		case <-done:
			return
		case <-ctx.Done():
			return // cancelled: the session is being ended, and nobody reads progress now
		case <-t.C:
		}
	}
}

// sweepStale ends what the session an attempt's note names left behind,
// and removes its sandbox.
func sweepStale(n sessionNote) error {
	if n.Pid > 0 {
		if err := session.KillStale(n.ProcIdentity); err != nil {
			return fmt.Errorf("end the session's process %d: %w", n.Pid, err)
		}
	}
	if n.Session != "" {
		if err := session.Sweep(n.Session); err != nil {
			return err
		}
	}
	if n.Sandbox != "" && filepath.IsAbs(n.Sandbox) && strings.HasPrefix(filepath.Base(n.Sandbox), "walkie-") {
		return os.RemoveAll(n.Sandbox)
	}
	return nil
}
