package temporal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/session"
)

// File is the activity of one of a round table's own sessions (a phase's,
// a reviewer's): the home made its sandbox and sends it packed, with the
// job; the worker unpacks it into a sandbox of its own, moves the job's
// paths there, and runs the file attempt with the engine, as the home's
// loop runs it (engine.RunFile), checking the file by the same rule. What
// the agent wrote, read no further than its limit, what it changed under
// Watch and the transcripts go back; the home records the attempt
// (engine.FileAttempt.Finish). A halt, the worker's stopping and a lost
// worker are as for a turn.
func (w *Worker) File(ctx context.Context, in FileInput) (FileOutput, error) {
	if err := w.hello(ctx, in.Hello); err != nil {
		return FileOutput{}, err
	}
	for _, name := range []string{in.Debate, in.Agent, in.Role} {
		if !pathComponent(name) {
			return FileOutput{}, w.badInput(fmt.Errorf("the session names %q, which is not a plain file name", name))
		}
	}
	// A file session reaches its sandbox alone; a debater's or an
	// implementer's role would add the record and more (engine's reach).
	if in.Session != config.RoleReviewer && in.Session != config.RolePhase {
		return FileOutput{}, w.badInput(fmt.Errorf("the session's role is %q, not a reviewer's or a phase's", in.Session))
	}
	check, ok := roundtable.FileCheck(in.Kind)
	if !ok {
		return FileOutput{}, w.badInput(fmt.Errorf("the session's file is of kind %q, which this worker cannot check", in.Kind))
	}
	agent, err := w.agent(in.Agent, in.Session, in.Timing)
	if err != nil {
		return FileOutput{}, err
	}
	info := activity.GetInfo(ctx)
	dir := filepath.Join(w.o.Dir, in.Debate, fmt.Sprintf("%s-%04d-%s-%d.%d", in.Role, in.Turn, in.Agent, in.Attempt, info.Attempt))
	transcript := engine.TranscriptBase(dir, in.Turn, in.Agent, in.Attempt)
	a, err := w.newAttempt(ctx, dir, transcript+".log")
	if err != nil {
		return FileOutput{}, err
	}
	defer a.close()
	fa := engine.FileAttempt{
		Record:  engine.TurnRecord{Turn: in.Turn, Round: in.Round, Agent: in.Agent, Role: in.Role, Attempt: in.Attempt},
		Sandbox: "walkie-" + in.Role + "-",
		Prepare: func(sandbox string, _ time.Time) (engine.Job, error) {
			return w.fileJob(ctx, in, a, agent, sandbox, transcript)
		},
		Note:  func(id, sandbox string) (func(), error) { return func() {}, a.starting(id, sandbox) },
		Kind:  in.Kind,
		Limit: in.Limit, Name: in.Name, Check: check, Words: in.Words, Watch: in.Watch,
	}
	w.log.Info("session started", zap.String("debate", in.Debate), zap.String("role", in.Role), zap.String("agent", in.Agent),
		zap.Int("attempt", in.Attempt), zap.Int32("delivery", info.Attempt))
	r, err := w.eng.RunFile(a.ctx, fa)
	a.close()
	if err != nil {
		if errors.Is(err, engine.ErrBadInput) {
			return FileOutput{}, w.badInput(err)
		}
		return FileOutput{}, err
	}
	r.Result.Worker = w.identity
	out, err := w.fileOutput(ctx, r)
	if err != nil {
		return FileOutput{}, err
	}
	w.log.Info("session done", zap.String("debate", in.Debate), zap.String("role", in.Role), zap.String("agent", in.Agent),
		zap.String("outcome", string(r.Record.Outcome)), zap.Int64("output_bytes", r.Bytes))
	return out, w.unretried(r.Result, in.Words.File, out)
}

// fileJob unpacks the home's sandbox into sandbox and makes the job there.
func (w *Worker) fileJob(ctx context.Context, in FileInput, a *attempt, agent config.Agent, sandbox, transcript string) (engine.Job, error) {
	rc, err := w.carry.open(ctx, in.Sandbox)
	if err != nil {
		return engine.Job{}, fmt.Errorf("the sandbox: %w", err)
	}
	defer rc.Close()
	if err := unpack(rc, sandbox, nil); err != nil {
		return engine.Job{}, fmt.Errorf("the sandbox: %w", err)
	}
	mv := relocate(in.Home, sandbox)
	vars := in.Vars
	vars.Prompt, vars.File, vars.Dir = mv.text(in.Prompt), mv.path(vars.File), mv.path(vars.Dir)
	env := make([]string, len(in.Env))
	for i, e := range in.Env {
		env[i] = mv.text(e)
	}
	return engine.Job{ID: session.NewID(), Agent: agent, Vars: vars, Dir: mv.path(in.Dir), Env: env, Transcript: transcript,
		Result: mv.path(in.Result), Done: in.Done, Control: a.control, Halted: a.halted.Load, Started: a.started,
		Output: func(l string) { a.line.Store(l) }, Role: in.Session, Reach: mv.reach(in.Reach)}, nil
}

// relocation moves what names the home's sandbox into the worker's. The
// home's sandbox is a directory made for this attempt alone (a random
// name, os.MkdirTemp), so its path appears in the prompt and the job only
// where walkie put it.
type relocation struct{ from, to string }

func relocate(from, to string) relocation { return relocation{filepath.Clean(from), to} }

func (r relocation) path(p string) string {
	if q, ok := r.moved(p); ok {
		return q
	}
	return p
}

// moved is p in the worker's sandbox, and whether p lies in the home's.
func (r relocation) moved(p string) (string, bool) {
	if p == r.from {
		return r.to, true
	}
	if rest, ok := strings.CutPrefix(p, r.from+string(filepath.Separator)); ok {
		return filepath.Join(r.to, rest), true
	}
	return p, false
}

func (r relocation) text(s string) string { return strings.ReplaceAll(s, r.from, r.to) }

// reach is the home's reach moved into the worker's sandbox. A path
// outside the home's sandbox names the home's machine, not this one: it
// is dropped from what may be read or written, never granted here; a
// hidden one stays hidden wherever it points.
func (r relocation) reach(in session.Reach) session.Reach {
	inside := func(ps []string) []string {
		var out []string
		for _, p := range ps {
			if q, ok := r.moved(p); ok {
				out = append(out, q)
			}
		}
		return out
	}
	hide := make([]string, len(in.Hide))
	for i, p := range in.Hide {
		hide[i] = r.path(p)
	}
	return session.Reach{Read: inside(in.Read), Write: inside(in.Write), Hide: hide}
}

// fileOutput gathers what goes home.
func (w *Worker) fileOutput(ctx context.Context, r engine.FileResult) (FileOutput, error) {
	out := FileOutput{Hello: w.carry.says(), Session: r.Result, Wrote: r.Wrote, Changed: r.Changed, Worker: w.identity, Size: r.File.Size}
	if r.Bad != nil {
		out.Bad = r.Bad.Error()
	}
	if r.File.Data != nil {
		b, err := w.carry.putBytes(ctx, r.File.Data)
		if err != nil {
			return out, err
		}
		out.File = &b
	}
	var err error
	if out.Raw, err = w.carry.putFile(ctx, r.RawPath); err != nil {
		return out, fmt.Errorf("the transcript: %w", err)
	}
	if out.Text, err = w.carry.putFile(ctx, r.TextPath); err != nil {
		return out, fmt.Errorf("the transcript: %w", err)
	}
	return out, nil
}
