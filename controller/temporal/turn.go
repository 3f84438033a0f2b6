package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
)

// Turn is the turn activity: one attempt at a turn, run with the engine
// on a copy of the record in the worker's own directory, exactly as the
// local loop runs it on the record itself. It heartbeats the output's
// size and latest line while the agent runs; a cancel (the workflow's
// answer to walkie halt) ends the session as halted, and the worker
// stopping ends it as interrupted. The agent's version of the file, the
// session's result and the transcripts go back; the home judges them.
func (w *Worker) Turn(ctx context.Context, in TurnInput) (TurnResult, error) {
	info := activity.GetInfo(ctx)
	// These name paths on this machine: a home may not reach outside the
	// worker's directory with them.
	for _, name := range []string{in.Debate, in.Participant, in.FileName} {
		if !pathComponent(name) {
			return TurnResult{}, w.badInput(fmt.Errorf("the turn names %q, which is not a plain file name", name))
		}
	}
	agent, err := w.o.Config.Agent(in.Agent)
	if err != nil {
		return TurnResult{}, w.badInput(fmt.Errorf("no agent %s in its config: %w", in.Agent, err))
	}
	// The home's policy for the session; how to run the CLI is this
	// machine's, with the tools of a debate turn.
	agent = agent.ForRole(config.RoleDebater)
	agent.Timeout, agent.Stall, agent.Grace, agent.KillGrace = in.Timeout, in.Stall, in.Grace, in.KillGrace
	dir := filepath.Join(w.o.Dir, in.Debate, fmt.Sprintf("%04d-%s-%d.%d", in.Turn, in.Participant, in.Attempt, info.Attempt))
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return TurnResult{}, fmt.Errorf("attempt directory: %w", err)
	}
	// The agent's scratch goes with the attempt; the transcripts stay.
	defer os.RemoveAll(work)
	file := filepath.Join(work, in.FileName)
	if err := os.WriteFile(file, in.Record, 0o644); err != nil {
		return TurnResult{}, fmt.Errorf("copy of the record: %w", err)
	}
	data := in.Prompt
	data.File = file
	prompt, err := (&config.Config{Prompts: map[string]string{in.PromptName: in.PromptSource}}).RenderPrompt(in.PromptName, data)
	if err != nil {
		return TurnResult{}, w.badInput(fmt.Errorf("prompt for %s: %w", in.Participant, err))
	}
	control := filepath.Join(dir, "control")
	if err := os.WriteFile(control, nil, 0o644); err != nil {
		return TurnResult{}, err
	}
	var halted atomic.Bool
	var line atomic.Value
	line.Store("")
	// The session outlives the activity's context on purpose, as it
	// outlives the loop's: it is ended, and the attempt reported, rather
	// than dropped.
	runCtx, interrupt := context.WithCancel(context.WithoutCancel(ctx))
	defer interrupt()
	watching := make(chan struct{})
	defer close(watching)
	go func() {
		select {
		case <-watching:
			return
		case <-ctx.Done():
		}
		if w.stopping.Err() != nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			interrupt() // the worker is stopping, or the server gave up on it
			return
		}
		// The workflow cancels a turn only for a halt: the engine sees it
		// through the control file, as it sees the log at home.
		halted.Store(true)
		_ = os.WriteFile(control, []byte("halted\n"), 0o644)
	}()
	at := engine.TurnAttempt{File: file, Before: in.Record, Turn: in.Turn, Round: in.Round, Attempt: in.Attempt,
		Participant: in.Participant, Agent: agent, Prompt: prompt, StateDir: dir, Control: control, Halted: halted.Load,
		Started: func(s *session.Session) { w.noteSession(dir, s) },
		Output:  func(l string) { line.Store(l) },
	}
	transcript := engine.TranscriptBase(dir, in.Turn, in.Participant, in.Attempt) + ".log"
	beating, stopBeating := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(beating)
		heartbeat(ctx, stopBeating, func() Progress {
			var n int64
			if fi, err := os.Stat(transcript); err == nil {
				n = fi.Size()
			}
			return Progress{Worker: w.identity, Bytes: n, Line: line.Load().(string)}
		})
	}()
	// No heartbeat may race the activity's return: the SDK cancels its
	// context then, and the heartbeat would fail.
	stop := sync.OnceFunc(func() {
		close(stopBeating)
		<-beating
	})
	defer stop()
	// Heartbeating already: fetching the start commit may take a while.
	// The record stays outside the worktree, as at home: the agent
	// appends to the file its prompt names.
	tr, err := w.makeTree(ctx, dir, in)
	if err != nil {
		return TurnResult{}, err
	}
	defer w.drop(ctx, tr, dir) // on every way out without a result
	if tr != nil {
		at.Dir, at.Env = tr.Path, controller.WorktreeEnv(tr.Path, tr.Branch, tr.start)
		at.Reach = engine.WorktreeReach(tr.Path, tr.repo.Root)
	}
	w.log.Info("turn started", zap.String("debate", in.Debate), zap.Int("turn", in.Turn), zap.String("agent", in.Participant),
		zap.Int("attempt", in.Attempt), zap.Int32("delivery", info.Attempt))
	res, err := w.eng.RunTurn(runCtx, at)
	stop()
	_ = os.Remove(filepath.Join(dir, sessionFile))
	if err != nil {
		if errors.Is(err, engine.ErrBadInput) {
			return TurnResult{}, w.badInput(err)
		}
		return TurnResult{}, err
	}
	res.Worker = w.identity
	r, err := w.result(file, dir, res, info.Attempt)
	if err == nil {
		r.Commits, err = w.finish(ctx, tr, dir, MaxRecordBytes-len(r.After))
	}
	if err != nil {
		return TurnResult{}, err
	}
	w.log.Info("turn done", zap.String("debate", in.Debate), zap.Int("turn", in.Turn), zap.String("agent", in.Participant),
		zap.String("ending", string(res.Ending)), zap.String("stop", string(res.Stop)), zap.Int64("output_bytes", res.Bytes))
	if res.Stop == "" {
		if out, detail, ok := engine.Failure(res.Result, "turn"); ok && !out.Retryable() {
			// Never retried, by walkie's rule: the retry policy lists the
			// type, and the attempt travels in the details to be recorded.
			return TurnResult{}, temporalsdk.NewApplicationErrorWithOptions(detail, string(out), temporalsdk.ApplicationErrorOptions{Details: []any{r}})
		}
	}
	return r, nil
}

// result gathers what goes home: the agent's version of the file and the
// transcripts, cut to size.
func (w *Worker) result(file, dir string, res engine.Result, delivery int32) (TurnResult, error) {
	r := TurnResult{Session: res, Worker: w.identity, Delivery: delivery, Kept: dir}
	// The agent may have left a gibibyte: read no more than can travel.
	after, size, err := readCapped(file, MaxRecordBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return r, err
	case size > MaxRecordBytes:
		return r, tooLarge("the agent's version of the record", int(size))
	default:
		r.After = after
	}
	if r.Raw, r.RawSize, err = readCapped(res.RawPath, TranscriptCap); err != nil {
		return r, err
	}
	if r.Text, r.TextSize, err = readCapped(res.TextPath, TranscriptCap); err != nil {
		return r, err
	}
	return r, nil
}

// readCapped reads path whole when it is at most limit bytes, else its
// first and last halves around a line saying how much was cut: the start
// says what the agent set out to do, the end how it ended.
func readCapped(path string, limit int) ([]byte, int64, error) {
	if path == "" {
		return nil, 0, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := fi.Size()
	if size <= int64(limit) {
		// Something the agent left running may still write: the bound
		// holds anyway.
		b, err := io.ReadAll(io.LimitReader(f, int64(limit)))
		return b, size, err
	}
	half := int64(limit / 2)
	head := make([]byte, half)
	tail := make([]byte, half)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, 0, err
	}
	if _, err := f.ReadAt(tail, size-half); err != nil {
		return nil, 0, err
	}
	out := append(head, fmt.Sprintf("\n[walkie: %d bytes cut here]\n", size-2*half)...)
	return append(out, tail...), size, nil
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

// sessionFile, in an attempt's directory, names the running session's
// process, so a worker that died leaves enough for the next start to end
// the agent it left behind.
const sessionFile = "session.json"

func (w *Worker) noteSession(dir string, s *session.Session) {
	id, err := session.Identify(s.Pid())
	if err != nil {
		w.log.Warn("cannot identify the session's process", zap.Int("pid", s.Pid()), zap.Error(err))
		return
	}
	w.noteSessionID(dir, id)
}

func (w *Worker) noteSessionID(dir string, id session.ProcIdentity) {
	b, _ := json.Marshal(id)
	if err := os.WriteFile(filepath.Join(dir, sessionFile), b, 0o644); err != nil {
		w.log.Warn("cannot record the session's process", zap.Error(err))
	}
}

// badInput is an error no retry on any worker fixes until a person acts.
func (w *Worker) badInput(err error) error {
	return temporalsdk.NewNonRetryableApplicationError(fmt.Sprintf("worker %s: %v", w.identity, err), ErrTypeBadInput, err)
}

// pathComponent reports whether s is one plain path element.
func pathComponent(s string) bool {
	return s != "" && s != "." && s != ".." && filepath.Base(s) == s && !strings.ContainsAny(s, `/\`)
}
