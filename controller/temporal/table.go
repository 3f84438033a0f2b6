package temporal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/tree"
	"github.com/walkie-sh/walkie/walkie"
)

// A round table on the Temporal engine. Its implementer's turns are turns
// of the debate's workflow like any other (Begin, Turn, Settle), with the
// workspace travelling both ways. Its own steps, the phases and a round's
// reviews, run at home as the local loop runs them (controller.Home.Table:
// the same freeze, hidden grader, quorum, deadlock rule and files), in
// one activity of the workflow, ActTable; each session they start (a
// phase's, a reviewer's, the reviewers at once) runs on a worker of its
// agent's queue as a workflow of its own, SessionWorkflow, whose id names
// the attempt: a home that dies in the middle of a step runs the step
// again when it is back, and finds the sessions it had started still
// running, or their results, under the same ids.

// tableHeartbeat is how often the table step tells the server the home
// is alive, and tableHeartbeatTimeout how soon a home that died inside
// one is noticed and the step run again.
const (
	tableHeartbeat        = 5 * time.Second
	tableHeartbeatTimeout = 30 * time.Second
)

// Table is the home activity of a round table's own step (Plan.Table).
func (h *Home) Table(ctx context.Context, in TableInput) (Tabled, error) {
	hm, err := controller.OpenHome(controller.Options{File: in.File, Config: h.config(), Log: h.log,
		Observe: func(e controller.Event) { h.emit(in.File, e) },
		RunFile: func(ctx context.Context, fa engine.FileAttempt) (engine.FileResult, error) {
			return h.runFile(ctx, in.File, fa)
		}})
	if err != nil {
		return Tabled{}, activityError(err)
	}
	defer hm.Close()
	if !h.lock(hm.Dir()) {
		return Tabled{}, errors.New("another walkie controller holds the debate; waiting for it")
	}
	defer h.unlock(hm.Dir())
	stop := h.beat(ctx)
	defer stop()
	h.watch(hm.Dir(), in.File)
	defer h.unwatch(hm.Dir())
	recs, err := hm.Table(ctx, in.Ref)
	h.mu.Lock()
	l := h.linkFor(in.File)
	l.recs = append(l.recs, recs...)
	h.mu.Unlock()
	return Tabled{Attempts: len(recs)}, activityError(err)
}

// beat heartbeats the activity of ctx until stop.
func (h *Home) beat(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(tableHeartbeat)
		defer t.Stop()
		for {
			activity.RecordHeartbeat(ctx)
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done) }
}

// runFile runs a round table's file attempt on a worker
// (roundtable.Host.RunFile): its sandbox is made and filled here, as the
// local engine fills it, and goes to the worker packed, with the job; the
// session's workflow runs it on the agent's queue; what comes back is
// recorded here by the attempt's own Finish, as a local attempt is.
func (h *Home) runFile(ctx context.Context, file string, fa engine.FileAttempt) (engine.FileResult, error) {
	sandbox, err := os.MkdirTemp("", fa.Sandbox)
	if err != nil {
		return engine.FileResult{}, fmt.Errorf("make a sandbox: %w", err)
	}
	defer os.RemoveAll(sandbox)
	started := time.Now().UTC().Truncate(time.Millisecond)
	j, err := fa.Prepare(sandbox, started)
	if err != nil {
		return engine.FileResult{}, err
	}
	if fa.Note != nil {
		forget, err := fa.Note(j.ID, sandbox)
		if err != nil {
			return engine.FileResult{}, err
		}
		defer forget()
	}
	in, err := h.fileInput(ctx, file, fa, j, sandbox)
	if err != nil {
		return engine.FileResult{}, err
	}
	start, heartbeat := turnTimeouts(j.Agent.Timing)
	id, err := sessionID(walkie.StateDir(file, in.Debate), in)
	if err != nil {
		return engine.FileResult{}, err
	}
	out, err := h.session(ctx, file, id, SessionInput{Queue: AgentQueue(j.Agent.Name, h.o.Queues), StartToClose: start, Heartbeat: heartbeat, File: in})
	if err != nil {
		return engine.FileResult{}, err
	}
	res, err := h.fileResult(ctx, fa, j, out, started)
	if err != nil {
		return engine.FileResult{}, err
	}
	return fa.Finish(started, res)
}

// sessionID is the workflow id of one attempt of a round table's
// session: the debate's id (its own workflow's), since when this home has
// it (the home's mark in the state directory dir: a debate made again
// under the same id, or taken back and homed again, never finds the
// sessions of the one before), the role, the turn, the agent and the
// attempt. A home restarted in the middle of a step finds the same id.
func sessionID(dir string, in FileInput) (string, error) {
	m, err := controller.ReadHomeMark(dir)
	if err != nil {
		return "", err
	}
	since := "unhomed"
	if m != nil {
		since = m.Since.UTC().Format("20060102T150405.000Z")
	}
	return fmt.Sprintf("%s/%s/%s-%d-%s-%d", in.Debate, since, in.Role, in.Turn, in.Agent, in.Attempt), nil
}

// fileInput is the file attempt as it travels: the sandbox packed, the
// job's parts, the file's rules.
func (h *Home) fileInput(ctx context.Context, file string, fa engine.FileAttempt, j engine.Job, sandbox string) (FileInput, error) {
	files, err := packDir(sandbox)
	if err != nil {
		return FileInput{}, err
	}
	packedBox, err := h.carry.putWith(ctx, func(w io.Writer) error { return pack(w, files) })
	if err != nil {
		return FileInput{}, fmt.Errorf("the sandbox of %s: %w", fa.Record.Agent, err)
	}
	r := fa.Record
	m, err := walkie.ReadMeta(file)
	if err != nil {
		return FileInput{}, err
	}
	return FileInput{Hello: h.carry.says(), Debate: m.ID, Role: r.Role, Session: j.Role, Reach: j.Reach, Turn: r.Turn, Round: r.Round, Attempt: r.Attempt, Agent: j.Agent.Name,
		Sandbox: packedBox, Home: sandbox, Prompt: j.Vars.Prompt, Dir: j.Dir, Result: j.Result, Done: j.Done, Vars: j.Vars, Env: j.Env,
		Timing: timingOf(j.Agent.Timing), Kind: fa.Kind, Limit: fa.Limit, Name: fa.Name, Words: fa.Words, Watch: fa.Watch}, nil
}

// session runs the session's workflow, or finds the one started before
// (by a home that died since) under the same id, and waits for its end;
// a halt meanwhile cancels it.
func (h *Home) session(ctx context.Context, file, id string, in SessionInput) (SessionOutput, error) {
	run, err := h.o.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: h.o.Queue,
		// A run still going is the one to wait for; one that ended with a
		// result is that result (Get below); one that failed may run again.
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		StaticSummary:            fmt.Sprintf("walkie %s session of %s (turn %d, attempt %d)", in.File.Role, in.File.Agent, in.File.Turn, in.File.Attempt),
	}, SessionWorkflow, in)
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		run = h.o.Client.GetWorkflow(ctx, id, "")
	} else if err != nil {
		return SessionOutput{}, fmt.Errorf("start the session %s: %w", id, err)
	}
	h.sessionOut(file, id, true)
	defer h.sessionOut(file, id, false)
	// A halt written before the session was noted as out left it alone.
	h.checkHalt(walkie.StateDir(file, in.File.Debate))
	var out SessionOutput
	if err := run.Get(ctx, &out); err != nil {
		return out, workflowError(id, err)
	}
	if r := out.Result; r != nil {
		if err := h.checkWorker(r.Worker, r.Hello); err != nil {
			return out, err
		}
	}
	return out, nil
}

// fileResult is what came back as the engine's result of the file
// attempt: the transcripts written where the attempt keeps them, the file
// as far as the worker read it.
func (h *Home) fileResult(ctx context.Context, fa engine.FileAttempt, j engine.Job, out SessionOutput, started time.Time) (engine.FileResult, error) {
	r := out.Result
	if r == nil {
		// No worker delivered it, or the halt came first: an attempt that
		// ended as it ends locally when its session is lost or halted.
		res := lostResult(SettleInput{Ref: controller.TurnRef{Started: started}, Lost: out.Lost, LostTimeout: out.LostTimeout, At: out.At})
		if out.Halted {
			res.Stop, res.Detail, res.Signal = walkie.OutcomeHalted, "halted before any worker took it", ""
		}
		return engine.FileResult{Result: res, Record: fa.Record}, nil
	}
	res, err := h.transcripts(ctx, j.Transcript, r.Session, r.Raw, r.Text)
	if err != nil {
		return engine.FileResult{}, fmt.Errorf("the transcript of %s: %w", fa.Record.Agent, err)
	}
	fr := engine.FileResult{Result: res, Record: fa.Record, Wrote: r.Wrote, Changed: r.Changed}
	if r.Bad != "" {
		fr.Bad = errors.New(r.Bad)
	}
	if r.File != nil {
		if fr.File.Data, err = h.carry.bytes(ctx, *r.File, int64(fa.Limit)); err != nil {
			return engine.FileResult{}, fmt.Errorf("what %s wrote: %w", fa.Record.Agent, err)
		}
		if fr.File.Data == nil {
			fr.File.Data = []byte{}
		}
		fr.File.Size = r.Size
	}
	return fr, nil
}

// sessionOut notes a session's workflow as out (or back), so that a halt
// cancels it.
func (h *Home) sessionOut(file, id string, out bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.linkFor(file)
	if l.sessions == nil {
		l.sessions = map[string]bool{} // by id: true until a halt was signalled to it
	}
	if out {
		l.sessions[id] = true
	} else {
		delete(l.sessions, id)
	}
}

// implementerFiles packs a round table's workspace (as a freeze lists
// it) and its approved phase files for the implementer's worker.
func (h *Home) implementerFiles(ctx context.Context, hm *controller.Home) (Blob, error) {
	root, paths, err := hm.WorkspaceFiles(ctx)
	if err != nil {
		return Blob{}, fmt.Errorf("list the workspace: %w", err)
	}
	files := make([]packed, 0, len(paths))
	for _, p := range paths {
		files = append(files, packed{name: packedWorkspace + "/" + p, src: filepath.Join(root, filepath.FromSlash(p))})
	}
	phases, _ := filepath.Glob(filepath.Join(hm.Dir(), "phases", "*.md"))
	for _, p := range phases {
		files = append(files, packed{name: packedPhases + "/" + filepath.Base(p), src: p})
	}
	b, err := h.carry.putWith(ctx, func(w io.Writer) error { return pack(w, files) })
	if err != nil {
		return Blob{}, fmt.Errorf("the workspace: %w", err)
	}
	return b, nil
}

// land puts what a remote implementer changed in its copy of the
// workspace into the workspace here: each file it added or modified as it
// left it, each it removed gone. Never the record or its state, whatever
// the worker says; nothing through a symlink or outside the workspace.
func (h *Home) land(ctx context.Context, hm *controller.Home, ws *WorkspaceChanges) error {
	root, _, err := hm.WorkspaceFiles(ctx)
	if err != nil {
		return err
	}
	own := func(p string) bool {
		full := filepath.Join(root, filepath.FromSlash(p))
		state := filepath.Join(filepath.Dir(hm.File()), ".walkie")
		return full != hm.File() && full != state && !strings.HasPrefix(full, state+string(filepath.Separator))
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, c := range ws.Changed {
		if c.Kind == tree.Removed && own(c.Path) {
			if err := r.RemoveAll(filepath.FromSlash(c.Path)); err != nil {
				return fmt.Errorf("remove %s: %w", c.Path, err)
			}
		}
	}
	rc, err := h.carry.open(ctx, ws.Files)
	if err != nil {
		return err
	}
	defer rc.Close()
	return unpack(rc, root, func(name string) (string, bool) { return name, own(name) })
}
