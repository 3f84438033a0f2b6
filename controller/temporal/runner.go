package temporal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// progressEvery is how often the fleet page's line for a remote turn is
// refreshed from the worker's last heartbeat. It is display only: nothing
// about the debate waits on it.
const progressEvery = 2 * time.Second

// Run takes the place of controller.Run in the daemon (daemon.Options.Run)
// for one debate that controller.Next says should run: it starts the
// debate's workflow, or signals the one already running (SignalWithStart
// with the debate's id as the workflow id, so there is never a second),
// and follows it until it ends. o.Once is not needed: the workflow
// settles each turn through the home, and the daemon looks again once it
// ends. o.Acquire is not used either: slots and rates belong to the
// workers' task queues. Run returns at once when ctx ends; the workflow
// goes on and its home activities wait for the home.
func (h *Home) Run(ctx context.Context, o controller.Options) (controller.Summary, error) {
	file, err := filepath.Abs(o.File)
	if err != nil {
		return controller.Summary{}, err
	}
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return controller.Summary{}, engine.BadInput(err)
	}
	dir := walkie.StateDir(file, meta.ID)
	st, err := walkie.LoadState(dir)
	if err != nil {
		return controller.Summary{}, err
	}
	if o.Config != nil {
		h.cfg.Store(o.Config)
	}
	if err := h.markHome(dir); err != nil {
		return controller.Summary{}, err
	}
	signal := h.attach(file, meta.ID, st, o.Observe)
	defer h.detach(file)
	if a := st.Running; a != nil {
		// A turn went out before this home started: hold the debate as
		// Begin did, and listen for a halt, until it is settled.
		if h.lock(dir) {
			h.sent(dir, file, &controller.TurnRef{Turn: a.Turn, Participant: a.Agent, Attempt: a.Number, Started: a.Started})
			h.emit(file, controller.Event{Kind: controller.EventTurnStarted, Turn: a.Turn, Agent: a.Agent, Attempt: a.Number, Started: a.Started})
		}
	}
	run, err := h.o.Client.SignalWithStartWorkflow(ctx, meta.ID, signal, nil, client.StartWorkflowOptions{
		ID: meta.ID, TaskQueue: h.o.Queue, Memo: map[string]any{"file": file, "home": h.o.Queue},
		StaticSummary: "walkie debate " + file,
	}, WorkflowName, DebateInput{File: file})
	if err != nil {
		return controller.Summary{}, fmt.Errorf("start workflow %s: %w", meta.ID, err)
	}
	if err := h.checkOwner(ctx, meta.ID, run.GetRunID(), file); err != nil {
		return controller.Summary{}, err
	}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	go h.followProgress(pctx, file, meta.ID)
	var ended Ended
	err = run.Get(ctx, &ended)
	sum := controller.Summary{Attempts: h.takeRecords(file)}
	sum.Status, sum.Reason = ended.Status, ended.Why
	if err != nil && ctx.Err() != nil {
		return sum, ctx.Err()
	}
	var closed *temporalsdk.WorkflowExecutionError
	if err == nil || errors.As(err, &closed) {
		// The run is over: a lock it left (terminated mid-turn) goes.
		h.unlock(dir)
	}
	if d, lerr := walkie.Load(file); lerr == nil {
		if at, serr := controller.ReadStanding(d, controller.StandingOptions{Config: h.cfg.Load()}); serr == nil {
			sum.Standing = at
		}
	}
	return sum, workflowError(meta.ID, err)
}

// markHome marks the debate as this home's before its workflow starts,
// so that walkie auto, turn and watch refuse it from then on, also while
// this home is down: a turn of its may be running on a worker with no
// lock held (controller.HomeFile). The mark stays when the workflow ends:
// the home runs the debate again after walkie extend or resume. Only a
// person takes it back (walkie auto --take-over).
func (h *Home) markHome(dir string) error {
	m, err := controller.ReadHomeMark(dir)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	want := controller.HomeMark{Engine: EngineName, Queue: h.o.Queue, Host: host, PID: os.Getpid(), Since: time.Now().UTC()}
	if m != nil && m.Engine == want.Engine && m.Queue == want.Queue {
		if m.Host == want.Host && m.PID == want.PID {
			return nil
		}
		want.Since = m.Since // the same home, restarted
	}
	return controller.MarkHome(dir, want)
}

// EngineName is the engine a Temporal home marks its debates with.
const EngineName = "temporal"

// attach points the debate's events at the daemon's observer, hands it
// what came before, and says which signal wakes the workflow.
func (h *Home) attach(file, id string, st *walkie.State, observe func(controller.Event)) string {
	h.mu.Lock()
	l := h.linkFor(file)
	l.id, l.observe = id, observe
	early := l.early
	l.early = nil
	signal := SignalWake
	if l.extra >= 0 && st.ExtraRounds > l.extra {
		signal = SignalExtend
	}
	l.extra = st.ExtraRounds
	h.mu.Unlock()
	if observe != nil {
		for _, e := range early {
			observe(e)
		}
	}
	return signal
}

func (h *Home) detach(file string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.linkFor(file).observe = nil
}

// takeRecords returns the attempts recorded since the last call.
func (h *Home) takeRecords(file string) []controller.TurnRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.linkFor(file)
	recs := l.recs
	l.recs = nil
	return recs
}

// checkOwner refuses a workflow another home started: debate ids are the
// workflow ids, so two directories (or machines) with a debate of the
// same id in one namespace would drive each other's debate.
func (h *Home) checkOwner(ctx context.Context, id, runID, file string) error {
	desc, err := h.o.Client.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return fmt.Errorf("describe workflow %s: %w", id, err)
	}
	var home, owner string
	dc := converter.GetDefaultDataConverter()
	if f := desc.GetWorkflowExecutionInfo().GetMemo().GetFields(); f != nil {
		_ = dc.FromPayload(f["home"], &home)
		_ = dc.FromPayload(f["file"], &owner)
	}
	if home != h.o.Queue || owner != file {
		return engine.BadInput(fmt.Errorf("debate id %s is already run as a workflow by the home on task queue %q for %s: debate ids must be unique within a Temporal namespace (rename one debate's id, or give each directory its own namespace)", id, home, owner))
	}
	return nil
}

// workflowError turns a workflow's failure into what the daemon knows:
// bad input (shown, and waited on until something changes) or an error
// it retries with a backoff.
func workflowError(id string, err error) error {
	if err == nil {
		return nil
	}
	var app *temporalsdk.ApplicationError
	if errors.As(err, &app) && (app.Type() == ErrTypeBadInput || app.Type() == ErrTypeTooLarge) {
		return engine.BadInput(fmt.Errorf("workflow %s: %s", id, app.Message()))
	}
	return fmt.Errorf("workflow %s: %w", id, err)
}

// followProgress shows the remote turn's progress on the fleet page:
// while an attempt is out, the last line its worker heartbeated, or that
// it waits for a worker.
func (h *Home) followProgress(ctx context.Context, file, id string) {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		out := h.linkFor(file).out
		h.mu.Unlock()
		if out == nil {
			last = ""
			continue
		}
		line := h.turnLine(ctx, id)
		if line == "" || line == last {
			continue
		}
		last = line
		h.emit(file, controller.Event{Kind: controller.EventOutput, Turn: out.Turn, Agent: out.Participant, Attempt: out.Attempt, Started: out.Started, Line: line})
	}
}

// turnLine is the pending turn activity's state in one line.
func (h *Home) turnLine(ctx context.Context, id string) string {
	desc, err := h.o.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return ""
	}
	for _, a := range desc.GetPendingActivities() {
		if a.GetActivityType().GetName() != ActTurn {
			continue
		}
		if a.GetState() == enumspb.PENDING_ACTIVITY_STATE_SCHEDULED {
			return "(waiting for a worker to take the turn)"
		}
		var p Progress
		if d := a.GetHeartbeatDetails(); d != nil && converter.GetDefaultDataConverter().FromPayloads(d, &p) == nil && p.Line != "" {
			return p.Line
		}
		return fmt.Sprintf("(running on %s)", a.GetLastWorkerIdentity())
	}
	return ""
}

// watchHalts signals a halt to the workflow whose turn is out when its
// debate's state says halted: the workflow cancels the turn activity and
// the worker ends the session.
func (h *Home) watchHalts() {
	for {
		select {
		case ev, ok := <-h.watcher.Events:
			if !ok {
				return
			}
			if filepath.Base(ev.Name) == walkie.LogFile {
				h.checkHalt(filepath.Dir(ev.Name))
			}
		case err, ok := <-h.watcher.Errors:
			if !ok {
				return
			}
			h.log.Warn("halt watch", zap.Error(err))
		}
	}
}

// checkHalt signals the halt once per attempt out: to the debate's
// workflow, which cancels its turn, and to the round table's sessions
// out on workers, each of which cancels its own.
func (h *Home) checkHalt(dir string) {
	st, err := walkie.LoadState(dir)
	if err != nil || st.Status != walkie.StatusHalted {
		return
	}
	id := filepath.Base(dir)
	var targets []string
	h.mu.Lock()
	for _, l := range h.links {
		if l.id != id {
			continue
		}
		if l.out != nil && !l.halted {
			l.halted = true
			targets = append(targets, id)
		}
		for s, signalled := range l.sessions {
			if !signalled {
				continue
			}
			l.sessions[s] = false // signalled once
			targets = append(targets, s)
		}
	}
	h.mu.Unlock()
	for _, wid := range targets {
		ctx, cancel := context.WithTimeout(context.Background(), homeTimeout)
		err := h.o.Client.SignalWorkflow(ctx, wid, "", SignalHalt, nil)
		cancel()
		if err != nil {
			h.log.Warn("cannot signal the halt; the session runs to its end and the debate stops after it", zap.String("workflow", wid), zap.Error(err))
			continue
		}
		h.log.Info("halt signalled to the running session", zap.String("workflow", wid), zap.String("reason", st.Reason))
	}
}
