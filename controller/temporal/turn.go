package temporal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/activity"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/temporal/blob"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Turn is the turn activity: one attempt at a turn, run with the engine
// on a copy of the record in the worker's own directory, exactly as the
// local loop runs it on the record itself. It heartbeats the output's
// size and latest line while the agent runs; a cancel (the workflow's
// answer to walkie halt) ends the session as halted, and the worker
// stopping ends it as interrupted. The agent's version of the file, the
// session's result and the transcripts go back; the home judges them.
func (w *Worker) Turn(ctx context.Context, in TurnInput) (TurnResult, error) {
	if err := w.hello(ctx, in.Hello); err != nil {
		return TurnResult{}, err
	}
	info := activity.GetInfo(ctx)
	// These name paths on this machine: a home may not reach outside the
	// worker's directory with them.
	for _, name := range []string{in.Debate, in.Participant, in.FileName} {
		if !pathComponent(name) {
			return TurnResult{}, w.badInput(fmt.Errorf("the turn names %q, which is not a plain file name", name))
		}
	}
	role := config.RoleDebater
	if in.Implementer != nil {
		role = config.RoleImplementer
	}
	agent, err := w.agent(in.Agent, role, in.Timing)
	if err != nil {
		return TurnResult{}, err
	}
	dir := filepath.Join(w.o.Dir, in.Debate, fmt.Sprintf("%04d-%s-%d.%d", in.Turn, in.Participant, in.Attempt, info.Attempt))
	a, err := w.newAttempt(ctx, dir, engine.TranscriptBase(dir, in.Turn, in.Participant, in.Attempt)+".log")
	if err != nil {
		return TurnResult{}, err
	}
	defer a.close()
	work := filepath.Join(dir, "work")
	// The agent's scratch goes with the attempt; the transcripts stay.
	defer os.RemoveAll(work)
	file := filepath.Join(work, in.FileName)
	before, err := w.copyRecord(ctx, in.Record, file)
	if err != nil {
		return TurnResult{}, err
	}
	var ws *copiedWorkspace
	prompt, err := w.turnPrompt(in, file)
	if in.Implementer != nil && err == nil {
		// The record stays outside the workspace, as at home; the agent
		// changes the copy, and what it changed goes back.
		ws, err = w.copyWorkspace(ctx, in, work)
		if err == nil {
			prompt, err = w.implementerPrompt(in.Implementer, file, ws)
		}
	}
	if err != nil {
		return TurnResult{}, err
	}
	id := session.NewID()
	at := engine.TurnAttempt{File: file, Before: before, Turn: in.Turn, Round: in.Round, Attempt: in.Attempt,
		Participant: in.Participant, Agent: agent, Prompt: prompt, StateDir: dir, Control: a.control, Halted: a.halted.Load, ID: id,
		Started: a.started,
		Output:  func(l string) { a.line.Store(l) },
		Role:    role,
	}
	if ws != nil {
		at.Reach = ws.reach()
	}
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
	if err := a.starting(id, ""); err != nil {
		return TurnResult{}, err
	}
	w.log.Info("turn started", zap.String("debate", in.Debate), zap.Int("turn", in.Turn), zap.String("agent", in.Participant),
		zap.Int("attempt", in.Attempt), zap.Int32("delivery", info.Attempt))
	res, err := w.eng.RunTurn(a.ctx, at)
	a.close()
	if err != nil {
		if errors.Is(err, engine.ErrBadInput) {
			return TurnResult{}, w.badInput(err)
		}
		return TurnResult{}, err
	}
	res.Worker = w.identity
	r, err := w.result(ctx, file, before, dir, res, info.Attempt)
	if err == nil {
		r.Commits, r.Bundle, err = w.finish(ctx, tr, dir)
	}
	if err == nil && ws != nil {
		r.Workspace, err = w.workspaceChanges(ctx, ws)
	}
	if err != nil {
		return TurnResult{}, err
	}
	w.log.Info("turn done", zap.String("debate", in.Debate), zap.Int("turn", in.Turn), zap.String("agent", in.Participant),
		zap.String("ending", string(res.Ending)), zap.String("stop", string(res.Stop)), zap.Int64("output_bytes", res.Bytes))
	return r, w.unretried(res, "turn", r)
}

// agent is the configured agent name as it runs here, with the tools of
// the session's role and the home's timing: the home's policy for the
// session; how to run the CLI is this machine's.
func (w *Worker) agent(name, role string, t Timing) (config.Agent, error) {
	agent, err := w.o.Config.Agent(name)
	if err != nil {
		return agent, w.badInput(fmt.Errorf("no agent %s in its config: %w", name, err))
	}
	agent = agent.ForRole(role)
	agent.Timeout, agent.Stall, agent.Grace, agent.KillGrace = t.Timeout, t.Stall, t.Grace, t.KillGrace
	return agent, nil
}

// unretried fails the activity with its result in the details when the
// session's outcome is never retried, by walkie's rule: the retry policy
// lists the type, and the attempt travels in the details to be recorded.
func (w *Worker) unretried(res engine.Result, what string, details any) error {
	if res.Stop != "" {
		return nil
	}
	if out, detail, ok := engine.Failure(res.Result, what); ok && !out.Retryable() {
		return temporalsdk.NewApplicationErrorWithOptions(detail, string(out), temporalsdk.ApplicationErrorOptions{Details: []any{details}})
	}
	return nil
}

// copyRecord writes the record the home sent into the worker's copy and
// returns its bytes.
func (w *Worker) copyRecord(ctx context.Context, record Blob, file string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	b, err := w.carry.bytes(ctx, record, blob.Max)
	if err != nil {
		return nil, fmt.Errorf("the record: %w", err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return nil, fmt.Errorf("copy of the record: %w", err)
	}
	return b, nil
}

// turnPrompt renders the home's prompt template for the worker's copy.
func (w *Worker) turnPrompt(in TurnInput, file string) (string, error) {
	data := in.Prompt
	data.File = file
	prompt, err := (&config.Config{Prompts: map[string]string{in.PromptName: in.PromptSource}}).RenderPrompt(in.PromptName, data)
	if err != nil {
		return "", w.badInput(fmt.Errorf("prompt for %s: %w", in.Participant, err))
	}
	return prompt, nil
}

// result gathers what goes home: the agent's version of the file, read no
// further than the home's judge would read it, and the transcripts.
func (w *Worker) result(ctx context.Context, file string, before []byte, dir string, res engine.Result, delivery int32) (TurnResult, error) {
	r := TurnResult{Hello: w.carry.says(), Session: res, Worker: w.identity, Delivery: delivery, Kept: dir}
	limit := int64(len(before)) + int64(walkie.DefaultMaxTurnBytes) + (64 << 10)
	if m, err := walkie.ReadMeta(file); err == nil {
		limit = walkie.JudgeLimit(&m, before)
	}
	// The agent may have left a gibibyte: read no more than is judged.
	after, err := readHead(file, limit+1)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return r, err
	default:
		b, err := w.carry.putBytes(ctx, after)
		if err != nil {
			return r, fmt.Errorf("the agent's version of the record: %w", err)
		}
		r.After = &b
	}
	if r.Raw, err = w.carry.putFile(ctx, res.RawPath); err != nil {
		return r, fmt.Errorf("the transcript: %w", err)
	}
	if r.Text, err = w.carry.putFile(ctx, res.TextPath); err != nil {
		return r, fmt.Errorf("the transcript: %w", err)
	}
	return r, nil
}

// readHead reads at most n bytes of a regular file.
func readHead(path string, n int64) ([]byte, error) {
	f, err := walkie.OpenRegular(path, os.O_RDONLY)
	var nr *walkie.NotRegularError
	if errors.As(err, &nr) {
		return nil, os.ErrNotExist // replaced by what is never opened: no agent's version to judge
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// badInput is an error no retry on any worker fixes until a person acts.
func (w *Worker) badInput(err error) error {
	return temporalsdk.NewNonRetryableApplicationError(fmt.Sprintf("worker %s: %v", w.identity, err), ErrTypeBadInput, err)
}

// pathComponent reports whether s is one plain path element.
func pathComponent(s string) bool {
	return s != "" && s != "." && s != ".." && filepath.Base(s) == s && !strings.ContainsAny(s, `/\`)
}
