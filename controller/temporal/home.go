package temporal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/temporal/blob"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// HomeOptions configure a home.
type HomeOptions struct {
	// Client is the home's from now on: Stop closes it.
	Client client.Client
	// Queue is the home's own task queue: its workflows and the
	// activities that touch its files. It must be the home's alone, and
	// the same across its restarts (DefaultHomeQueue).
	Queue string
	// Queues overrides agents' task queues (AgentQueue).
	Queues map[string]string
	// Config is used until the daemon passes its own with a debate.
	Config *config.Config
	// Blobs is where the home keeps what travels by reference (--blobs);
	// its workers reach it there, or over HTTP (BlobHandler).
	Blobs *blob.Dir
	// BlobListen, when set, is the HTTP address the home serves Blobs at
	// for workers that share no filesystem with it (their --blobs URL);
	// BlobToken, when set, is the bearer token it wants (CheckBlobListen).
	BlobListen, BlobToken string
	// Version is this walkie's (walkie --version): a worker of another
	// is refused.
	Version string
	Log     *zap.Logger
}

// Home is the file-owning side of `walkie serve --engine temporal`: the
// home activities, the workflows' worker, and Run, which takes the place
// of controller.Run in the daemon.
type Home struct {
	o     HomeOptions
	log   *zap.Logger
	cfg   atomic.Pointer[config.Config]
	w     worker.Worker
	carry *carrier

	blobSrv *http.Server // serving Blobs at BlobListen
	pruning chan struct{}

	mu      sync.Mutex
	links   map[string]*link        // by record path
	locks   map[string]*walkie.Lock // run locks held, by state directory
	watcher *fsnotify.Watcher       // state directories of debates with a turn out, for halts
}

// link is what the home knows of one debate between calls: where its
// events go, and the attempt out on a worker.
type link struct {
	id      string
	observe func(controller.Event)
	early   []controller.Event // events before the daemon attached
	recs    []controller.TurnRecord
	out     *controller.TurnRef // the attempt begun and not yet settled
	halted  bool                // a halt was signalled for out
	extra   int                 // ExtraRounds when last started (-1: never)
	// sessions are the round table's sessions out on workers (their
	// workflows' ids), which a halt cancels.
	sessions map[string]bool
}

// DefaultHomeQueue is a home's task queue when none is given: one per
// machine and served directory, so two homes never take each other's
// activities.
func DefaultHomeQueue(dir string) string {
	host, _ := os.Hostname()
	abs, _ := filepath.Abs(dir)
	return fmt.Sprintf("walkie-home-%s-%08x", cmp.Or(host, "localhost"), fnv32(abs))
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// NewHome makes a home; Start starts its worker.
func NewHome(o HomeOptions) (*Home, error) {
	if o.Client == nil || o.Queue == "" {
		return nil, errors.New("temporal home: a client and a task queue are needed")
	}
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	var store blob.Store
	if o.Blobs != nil {
		store = o.Blobs
	}
	carry, err := newCarrier(context.Background(), store, o.Version)
	if err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("fsnotify: %w", err)
	}
	h := &Home{o: o, log: o.Log.Named("temporal"), carry: carry, links: map[string]*link{}, locks: map[string]*walkie.Lock{}, watcher: w}
	h.cfg.Store(o.Config)
	return h, nil
}

// Register puts the workflow and the home activities on w.
func (h *Home) Register(w worker.Registry) {
	w.RegisterWorkflowWithOptions(Debate, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterWorkflowWithOptions(Session, workflow.RegisterOptions{Name: SessionWorkflow})
	for name, fn := range map[string]any{ActDecide: h.Decide, ActBegin: h.Begin, ActSettle: h.Settle, ActNotify: h.Notify, ActAbandon: h.Abandon,
		ActTable: h.Table} {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

// Start polls the home's task queue and watches for halts, until Stop.
func (h *Home) Start() error {
	h.w = worker.New(h.o.Client, h.o.Queue, worker.Options{})
	h.Register(h.w)
	if err := h.w.Start(); err != nil {
		return fmt.Errorf("temporal home worker on %s: %w", h.o.Queue, err)
	}
	go h.watchHalts()
	if err := h.serveBlobs(); err != nil {
		return err
	}
	h.log.Info("home polling", zap.String("task_queue", h.o.Queue))
	return nil
}

// Stop lets the home activities in progress finish, then stops polling,
// releases the run locks and closes the client. The workflows go on: their
// next home activity waits for the home to be back.
func (h *Home) Stop() {
	if h.w != nil {
		h.w.Stop()
	}
	if h.blobSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = h.blobSrv.Shutdown(ctx)
		cancel()
	}
	if h.pruning != nil {
		close(h.pruning)
	}
	h.o.Client.Close()
	_ = h.watcher.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	for dir, l := range h.locks {
		l.Unlock()
		delete(h.locks, dir)
	}
}

func (h *Home) config() *config.Config { return h.cfg.Load() }

// open opens the debate for one activity.
func (h *Home) open(file string) (*controller.Home, error) {
	hm, err := controller.OpenHome(controller.Options{File: file, Config: h.config(), Log: h.log})
	return hm, activityError(err)
}

// Decide is the home activity that says what is next: it takes the
// debate's run lock (another controller holding it means "held"), makes
// the debate whole after a crash and asks controller.Next. A turn to run
// keeps the lock until the attempt is settled.
func (h *Home) Decide(ctx context.Context, in DebateInput) (Plan, error) {
	hm, err := h.open(in.File)
	if err != nil {
		return Plan{}, err
	}
	defer hm.Close()
	if !h.lock(hm.Dir()) {
		return Plan{Action: string(controller.ActHeld), Why: "another walkie controller is running this debate"}, nil
	}
	p, err := h.plan(hm)
	if err != nil || p.Action != string(controller.ActRun) {
		h.unlock(hm.Dir())
	}
	return p, activityError(err)
}

func (h *Home) plan(hm *controller.Home) (Plan, error) {
	step, err := hm.Decide()
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Action: string(step.Action), Why: step.Why, Status: step.Status}
	if step.Action != controller.ActRun {
		return p, nil
	}
	p.Ref = controller.TurnRef{Turn: step.Turn, Round: step.Round, Participant: step.Participant, Attempt: step.Attempt}
	if step.Table {
		p.Table = true
		return p, nil
	}
	a := step.Agent
	cfg := h.config()
	name := cmp.Or(a.Prompt, config.DefaultPrompt)
	// Rendered here once so a broken template is the home's bad input,
	// not a failure on every worker.
	data := step.Prompt
	data.File = hm.File()
	if _, err := cfg.RenderPrompt(name, data); err != nil {
		return Plan{}, engine.BadInput(fmt.Errorf("prompt for %s: %w", step.Participant, err))
	}
	p.Queue = AgentQueue(a.Name, h.o.Queues)
	p.Turn = TurnInput{Hello: h.carry.says(), Debate: filepath.Base(hm.Dir()), FileName: filepath.Base(hm.File()), Turn: step.Turn, Round: step.Round,
		Attempt: step.Attempt, Participant: step.Participant, Agent: a.Name, PromptName: name, PromptSource: cfg.Prompts[name],
		Prompt: step.Prompt, Timing: timingOf(a.Timing)}
	if step.Implementer != nil {
		if _, err := cfg.RenderRoundtable("implementer", *step.Implementer); err != nil {
			return Plan{}, engine.BadInput(fmt.Errorf("the implementer's prompt: %w", err))
		}
		p.Turn.Implementer = &ImplementerTurn{Template: cfg.Roundtable.Implementer, Data: *step.Implementer,
			Workspace: insideDir(filepath.Dir(hm.File()), step.Implementer.Workspace)}
	}
	p.StartToClose, p.Heartbeat = turnTimeouts(a.Timing)
	return p, nil
}

func timingOf(t config.Timing) Timing {
	return Timing{Timeout: t.Timeout, Stall: t.Stall, Grace: t.Grace, KillGrace: t.KillGrace}
}

// insideDir is path relative to dir, slash-separated, when it lies inside
// it ("." for dir itself), else "".
func insideDir(dir, path string) string {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return ""
	}
	return filepath.ToSlash(rel)
}

// Heartbeat timeout bounds: the worker heartbeats every heartbeatEvery
// whatever the agent does, so the timeout only says how soon a lost
// worker is noticed.
const (
	minHeartbeat   = 5 * time.Second
	maxHeartbeat   = time.Minute
	heartbeatEvery = time.Second
	// uploadMargin is the start-to-close time beyond the session's own
	// limits, for the worker to end it and send the result.
	uploadMargin = time.Minute
)

// turnTimeouts maps an agent's timing onto the turn activity's: the
// session's timeout (and the time to end it) plus a margin is the
// start-to-close timeout, a backstop for a worker that hangs, since the
// session times out by itself first; the stall window, within bounds, is
// the heartbeat timeout.
func turnTimeouts(t config.Timing) (startToClose, heartbeat time.Duration) {
	heartbeat = maxHeartbeat
	if t.Stall > 0 {
		heartbeat = min(max(t.Stall, minHeartbeat), maxHeartbeat)
	}
	return t.Timeout + t.Grace + t.KillGrace + uploadMargin, heartbeat
}

// Begin is the home activity that begins the attempt: the snapshot and the
// running attempt in the state, as the loop's begin. It answers Stale
// when the record moved on since Decide (a person posted, another
// controller ran a turn): the workflow then decides again.
func (h *Home) Begin(ctx context.Context, in BeginInput) (Began, error) {
	hm, err := h.open(in.File)
	if err != nil {
		return Began{}, err
	}
	defer hm.Close()
	if !h.lock(hm.Dir()) {
		return Began{Stale: true}, nil
	}
	if d, err := walkie.Load(hm.File()); err != nil || d.Progress().Turns != in.Ref.Turn-1 {
		h.unlock(hm.Dir())
		return Began{Stale: true}, nil
	}
	b, err := hm.Begin(in.Ref)
	if errors.Is(err, controller.ErrMovedOn) {
		// A post landed between the look above and the record's lock.
		h.unlock(hm.Dir())
		return Began{Stale: true}, nil
	}
	if err != nil {
		h.unlock(hm.Dir())
		return Began{}, activityError(err)
	}
	snapshot, started := b.Snapshot, b.Started
	out := Began{Started: started, Worktree: b.Worktree}
	abandon := func(err error) (Began, error) {
		_ = hm.Abandon(controller.TurnRef{Turn: in.Ref.Turn, Round: in.Ref.Round, Participant: in.Ref.Participant, Attempt: in.Ref.Attempt, Started: started})
		h.unlock(hm.Dir())
		return Began{}, err
	}
	if out.Record, err = h.carry.putBytes(ctx, snapshot); err != nil {
		return abandon(fmt.Errorf("the record: %w", err))
	}
	if in.Implementer {
		files, err := h.implementerFiles(ctx, hm)
		if err != nil {
			return abandon(err)
		}
		out.Implementer = &files
	}
	ref := in.Ref
	ref.Started = started
	h.sent(hm.Dir(), hm.File(), &ref)
	h.emit(hm.File(), controller.Event{Kind: controller.EventTurnStarted, Turn: ref.Turn, Round: ref.Round, Agent: ref.Participant, Attempt: ref.Attempt, Started: started})
	h.log.Info("turn sent", zap.String("debate", filepath.Base(hm.Dir())), zap.Int("turn", ref.Turn), zap.String("agent", ref.Participant),
		zap.Int("attempt", ref.Attempt))
	return out, nil
}

// Settle is the home activity that records the attempt: the worker's
// transcripts into the state directory, then controller.Home.Settle, the
// loop's own judging and logging. Called again after a crash, it records
// nothing twice.
func (h *Home) Settle(ctx context.Context, in SettleInput) (Settled, error) {
	hm, err := h.open(in.File)
	if err != nil {
		return Settled{}, err
	}
	defer hm.Close()
	if !h.lock(hm.Dir()) {
		// Another controller runs the debate; it recovers this attempt
		// itself. Wait for it to let go, then find the attempt stale.
		return Settled{}, errors.New("another walkie controller holds the debate; waiting for it")
	}
	defer h.unlock(hm.Dir())
	out := controller.Remote{Session: lostResult(in)}
	if r := in.Result; r != nil {
		if err := h.checkWorker(r.Worker, r.Hello); err != nil {
			return Settled{}, activityError(err)
		}
		if out, err = h.remote(ctx, hm, in.Ref, r); err != nil {
			return Settled{}, err
		}
	}
	rec, err := hm.Settle(in.Ref, out)
	h.settled(hm.Dir(), hm.File(), in.Ref, rec, err == nil)
	if errors.Is(err, controller.ErrStale) {
		h.log.Warn("a remote turn's result came for an attempt no longer running; not recorded", zap.String("file", hm.File()),
			zap.Int("turn", in.Ref.Turn), zap.Int("attempt", in.Ref.Attempt), zap.Error(err))
		return Settled{Stale: true}, nil
	}
	if err != nil {
		return Settled{}, activityError(err)
	}
	return Settled{Record: rec}, nil
}

// lostResult is the session result of an attempt no worker delivered:
// crashed (the workers were lost) or timed out, so it counts against the
// turn's retries like a local crash or timeout.
func lostResult(in SettleInput) engine.Result {
	end := in.At.UTC()
	r := session.Result{Started: in.Ref.Started, Ended: end, Duration: end.Sub(in.Ref.Started), ExitCode: -1,
		Ending: session.EndExited, Signal: "worker lost", Detail: in.Lost}
	if in.LostTimeout {
		r.Ending, r.Signal = session.EndTimeout, ""
	}
	return engine.Result{Result: r}
}

// remote takes what a worker sent back out of its blobs: the agent's
// version of the record, its commits, the transcripts (written where the
// loop writes its own), and what an implementer changed in the workspace.
func (h *Home) remote(ctx context.Context, hm *controller.Home, ref controller.TurnRef, r *TurnResult) (controller.Remote, error) {
	out := controller.Remote{Commits: r.Commits}
	var err error
	if r.After != nil {
		if out.After, err = h.carry.bytes(ctx, *r.After, blob.Max); err != nil {
			return out, fmt.Errorf("the agent's version of the record: %w", err)
		}
	}
	if r.Bundle != nil && out.Commits != nil {
		c := *out.Commits
		if c.Bundle, err = h.carry.bytes(ctx, *r.Bundle, blob.Max); err != nil {
			return out, fmt.Errorf("the turn's commits: %w", err)
		}
		out.Commits = &c
	}
	if out.Session, err = h.transcripts(ctx, engine.TranscriptBase(hm.Dir(), ref.Turn, ref.Participant, ref.Attempt), r.Session, r.Raw, r.Text); err != nil {
		return out, fmt.Errorf("the transcript of turn %d: %w", ref.Turn, err)
	}
	if ws := r.Workspace; ws != nil {
		out.Land = func() error { return h.land(ctx, hm, ws) }
	}
	return out, nil
}

// transcripts writes a worker's transcripts where the loop writes its own,
// base+".log" and ".txt", and returns the session's result naming them.
func (h *Home) transcripts(ctx context.Context, base string, res engine.Result, raw, text Blob) (engine.Result, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return res, err
	}
	res.RawPath, res.TextPath = base+".log", base+".txt"
	for path, b := range map[string]Blob{res.RawPath: raw, res.TextPath: text} {
		tmp := path + ".tmp"
		if err := h.carry.writeFile(ctx, b, tmp, 0o644); err != nil {
			return res, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return res, err
		}
	}
	return res, nil
}

// Notify is the home activity that announces a recorded attempt to the
// daemon: the fleet page, the metrics, the notification sinks. It runs
// after Settle so that an announcement lost with a crashed home is made
// again, not dropped.
func (h *Home) Notify(ctx context.Context, in NotifyInput) error {
	rec := in.Record
	status := ""
	if d, err := walkie.Load(in.File); err == nil {
		if at, err := controller.ReadStanding(d, controller.StandingOptions{Config: h.cfg.Load()}); err == nil {
			status = at.Status
		}
	}
	h.emit(in.File, controller.Event{Kind: controller.EventTurnRecorded, Turn: rec.Turn, Round: rec.Round, Agent: rec.Agent,
		Attempt: rec.Attempt, Record: &rec, Status: status})
	return nil
}

// Abandon is the home activity that undoes an attempt no session ran for.
func (h *Home) Abandon(ctx context.Context, in AbandonInput) error {
	hm, err := h.open(in.File)
	if err != nil {
		return err
	}
	defer hm.Close()
	if !h.lock(hm.Dir()) {
		return nil // another controller has it, and recovers the attempt
	}
	defer h.unlock(hm.Dir())
	if err := hm.Abandon(in.Ref); err != nil {
		return err
	}
	h.settled(hm.Dir(), hm.File(), in.Ref, controller.TurnRecord{}, false)
	h.log.Info("turn abandoned before any session ran", zap.String("file", hm.File()), zap.Int("turn", in.Ref.Turn), zap.String("cause", in.Cause))
	return nil
}

// lock takes the debate's run lock for the home, or finds it already
// held by the home; false when another controller holds it.
func (h *Home) lock(dir string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.locks[dir] != nil {
		return true
	}
	l, err := walkie.TryRunLock(dir)
	if err != nil {
		return false
	}
	h.locks[dir] = l
	return true
}

func (h *Home) unlock(dir string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l := h.locks[dir]; l != nil {
		l.Unlock()
		delete(h.locks, dir)
	}
}

// linkFor is the debate's link, made on first use.
func (h *Home) linkFor(file string) *link {
	l := h.links[file]
	if l == nil {
		l = &link{extra: -1}
		h.links[file] = l
	}
	return l
}

// sent notes the attempt out on a worker, and watches the debate's state
// (in dir) for a halt meanwhile.
func (h *Home) sent(dir, file string, ref *controller.TurnRef) {
	h.mu.Lock()
	l := h.linkFor(file)
	l.id, l.out, l.halted = filepath.Base(dir), ref, false
	h.mu.Unlock()
	h.watch(dir, file)
}

// watch watches the debate's state (in dir) for a halt, while a turn or a
// round table's sessions are out.
func (h *Home) watch(dir, file string) {
	h.mu.Lock()
	h.linkFor(file).id = filepath.Base(dir)
	h.mu.Unlock()
	if err := h.watcher.Add(dir); err != nil {
		h.log.Warn("cannot watch the debate for halts; walkie halt takes effect after the turn", zap.String("dir", dir), zap.Error(err))
	}
	// A halt written before the watch began left no event.
	h.checkHalt(dir)
}

func (h *Home) unwatch(dir string) {
	_ = h.watcher.Remove(dir) // gone already when the home restarted meanwhile
}

// settled notes that ref is no longer out, and the record if there is one.
func (h *Home) settled(dir, file string, ref controller.TurnRef, rec controller.TurnRecord, recorded bool) {
	h.mu.Lock()
	l := h.linkFor(file)
	if l.out != nil && l.out.Turn == ref.Turn && l.out.Attempt == ref.Attempt {
		l.out = nil
	}
	if recorded {
		l.recs = append(l.recs, rec)
	}
	h.mu.Unlock()
	h.unwatch(dir)
}

// emit gives e to the daemon's observer for file, or keeps it until the
// daemon attaches (a workflow's activity can come before the daemon's
// first look at the debate after a restart).
func (h *Home) emit(file string, e controller.Event) {
	e.File = cmp.Or(e.File, file)
	if e.Debate == "" {
		if m, err := walkie.ReadMeta(file); err == nil {
			e.Debate = m.ID
		}
	}
	h.mu.Lock()
	l := h.linkFor(file)
	obs := l.observe
	if obs == nil && len(l.early) < 100 {
		l.early = append(l.early, e)
	}
	h.mu.Unlock()
	if obs != nil {
		obs(e)
	}
}

// activityError marks bad input as an error no retry fixes; any other
// error is retried.
func activityError(err error) error {
	if err != nil && errors.Is(err, controller.ErrBadInput) {
		return temporalsdk.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, err)
	}
	return err
}
