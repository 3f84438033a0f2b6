package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/walkie-sh/walkie/controller/tree"
	"github.com/walkie-sh/walkie/walkie"
)

// FileAttempt is one session whose product is one file the agent is asked
// to write: a round table's phase output or reviewer's verdict, a
// distilled briefing. Every such attempt takes the same steps, in this
// order — wait for a session slot, make a sandbox, fill it, note what
// crash recovery needs, run the session, read the file no further than
// the limit, keep it for inspection, judge it, log the attempt, charge
// its cost to the debate — and each caller supplies only what differs.
type FileAttempt struct {
	// Record is the attempt's record in the log as far as it is known
	// before the session: turn, round, agent, role, attempt. RunFile sets
	// its start.
	Record TurnRecord
	// Acquire waits for a session slot (the limits); nil: none.
	Acquire AcquireFunc
	// Sandbox, when set, is the name pattern (os.MkdirTemp) of a
	// directory made for this attempt alone and removed after it.
	Sandbox string
	// Prepare fills the sandbox ("" without one) with what the agent
	// reads and returns the job to run, whose Result is the file the agent
	// is to write. started is the attempt's start, for its events.
	Prepare func(sandbox string, started time.Time) (Job, error)
	// Note, when set, records the session's id and sandbox before it
	// starts, so a controller that dies mid-session leaves enough to end
	// it; forget is called once the session is over.
	Note func(id, sandbox string) (forget func(), err error)
	// Kind names Check for an engine that runs the session on another
	// machine, which checks the file there with the same rule
	// (controller/temporal): "verdict", "phase". Empty: none is known.
	Kind string
	// Limit is the most of the file walkie reads; a bigger file is
	// refused by Name, the name the agent was given ("verdict.json").
	// Check says why the file is of no use (nil: any file is). A job
	// without Ready is ended once the file is within the limit and passes
	// Check.
	Limit int
	Name  string
	Check func([]byte) error
	// Keep, when set, is where what the agent wrote is kept for
	// inspection, usable or not.
	Keep string
	// Words name things in the outcome's detail.
	Words FileWords
	// Watch, when set, is a directory of the sandbox (relative to it)
	// whose changes during the session are listed in the result: what a
	// reviewer changed in its copy of the workspace, found where the
	// session ran. Inspect, when set, is given them before the attempt is
	// logged, and may add to its detail.
	Watch   string
	Inspect func(rec *TurnRecord, changed []tree.Change) error
	// StateDir, when set, is the debate's state directory: the attempt
	// is logged in its log. Debate, when set, is the record whose state
	// the attempt's cost is charged to, in the same line (LogAttempt).
	StateDir, Debate string
}

// FileResult is how a file attempt went.
type FileResult struct {
	Result
	// Record is the attempt as logged: outcome and detail, usage, the
	// kept file, the transcripts.
	Record TurnRecord
	// File is what the agent wrote (Wrote), read up to the limit; its
	// Data is nil when nothing could be read (no file, or not a regular
	// one).
	File  AgentFile
	Wrote bool
	// Bad says why what it wrote is of no use (over the limit, failing
	// Check, not a regular file); nil when it is usable or missing.
	Bad error
	// Text is the usable file: set when the outcome is accepted.
	Text []byte
	// Changed is what the session changed under Watch.
	Changed []tree.Change
}

// FileWords are how an attempt names things in its outcome's detail.
type FileWords struct {
	Stopped string // what a halt discards: "review", "phase's file"
	Written string // the detail of a usable file: "verdict recorded"
	Writer  string // who the engine ended after the grace: "reviewer"
	File    string // what a failed session left no valid one of: "verdict"
	Missing string // the detail when nothing was written
}

// RunFile runs one file attempt, step by step as FileAttempt says. An
// error means the attempt could not be made or recorded (no slot, no
// sandbox, bad input, a log that cannot be written); a session that went
// wrong is an outcome in the result.
func (e *Engine) RunFile(ctx context.Context, a FileAttempt) (res FileResult, err error) {
	if a.Acquire != nil {
		release, err := a.Acquire(ctx, a.Record.Agent)
		if err != nil {
			return FileResult{}, err
		}
		defer func() { release(res.Record.Usage.Spent()) }()
	}
	sandbox := ""
	if a.Sandbox != "" {
		dir, err := os.MkdirTemp("", a.Sandbox)
		if err != nil {
			return FileResult{}, fmt.Errorf("make a sandbox: %w", err)
		}
		defer os.RemoveAll(dir)
		sandbox = dir
	}
	return e.runFile(ctx, a, sandbox)
}

// runFile is RunFile in its slot and sandbox, which outlive it: the file
// and the copy it inspects are there.
func (e *Engine) runFile(ctx context.Context, a FileAttempt, sandbox string) (FileResult, error) {
	started := time.Now().UTC().Truncate(time.Millisecond)
	j, err := a.Prepare(sandbox, started)
	if err != nil {
		return FileResult{}, err
	}
	if j.Ready == nil {
		j.Ready = func() bool {
			f, err := ReadAgentFile(j.Result, a.Limit)
			return err == nil && !f.Over() && (a.Check == nil || a.Check(f.Data) == nil)
		}
	}
	if a.Note != nil {
		forget, err := a.Note(j.ID, sandbox)
		if err != nil {
			return FileResult{}, err
		}
		defer forget()
	}
	watched := filepath.Join(sandbox, a.Watch)
	var before tree.Manifest
	if a.Watch != "" {
		if before, err = tree.ScanAll(watched); err != nil {
			return FileResult{}, fmt.Errorf("look at %s before the session: %w", watched, err)
		}
	}
	res, err := e.Run(ctx, j)
	if err != nil {
		return FileResult{}, err
	}
	out := FileResult{Result: res, Record: a.Record}
	out.read(j.Result, a)
	if a.Watch != "" {
		now, err := tree.ScanAll(watched)
		if err != nil {
			return out, fmt.Errorf("look at %s after the session: %w", watched, err)
		}
		out.Changed = tree.Diff(before, now)
	}
	return a.Finish(started, out)
}

// Finish is the part of a file attempt after its session, given how the
// session went and what it wrote (out's Result, File, Wrote, Bad and
// Changed): the kept copy, the outcome, Inspect, the log and the cost. An
// engine that ran the session on another machine calls it at home with
// what came back, so an attempt is recorded the same way wherever it ran;
// out's transcripts must be where a says the attempt's are kept.
func (a FileAttempt) Finish(started time.Time, out FileResult) (FileResult, error) {
	rec := &out.Record
	rec.Started = started
	out.Result.Fill(rec, a.StateDir)
	if err := out.keep(a); err != nil {
		return out, err
	}
	rec.Outcome, rec.Detail = classifyFile(out.Result, out.Wrote, out.Bad, a.Words)
	if rec.Outcome == walkie.OutcomeAccepted {
		out.Text = out.File.Data
	}
	if a.Inspect != nil {
		if err := a.Inspect(rec, out.Changed); err != nil {
			return out, err
		}
	}
	return out, a.record(*rec)
}

// record logs the attempt in the debate's log, with its cost charged to
// the debate in the same line, as far as a says where they are.
func (a FileAttempt) record(rec TurnRecord) error {
	switch {
	case a.Debate != "":
		if err := LogAttempt(a.Debate, rec); err != nil {
			return fmt.Errorf("log %s's attempt %d and its cost: %w", rec.Agent, rec.Attempt, err)
		}
	case a.StateDir != "":
		return AppendTurnLog(a.StateDir, rec)
	}
	return nil
}

// read reads the file the agent was to write and judges whether it is
// of use.
func (out *FileResult) read(path string, a FileAttempt) {
	f, err := ReadAgentFile(path, a.Limit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		// Not a regular file, or unreadable: written, and of no use.
		out.Wrote, out.Bad = true, err
		return
	}
	out.File, out.Wrote = f, true
	switch {
	case f.Over():
		out.Bad = f.TooBig(a.Name, a.Limit)
	case a.Check != nil:
		out.Bad = a.Check(f.Data)
	}
}

// keep keeps what the agent wrote (a.Keep) for inspection, usable or not.
func (out *FileResult) keep(a FileAttempt) error {
	if a.Keep == "" || out.File.Data == nil { // nothing written, or nothing that could be read
		return nil
	}
	if err := walkie.WriteFileAtomic(a.Keep, out.File.Kept(), 0o644); err != nil {
		return fmt.Errorf("keep what %s wrote: %w", out.Record.Agent, err)
	}
	out.Record.Kept = Rel(a.StateDir, a.Keep)
	return nil
}

// classifyFile names the outcome of an attempt whose product is one file.
// A usable file counts whatever the exit code; the session's ending comes
// before a missing or unusable file, so a timeout reads as a timeout. A
// failure keeps what the CLI itself said of it, as a debate turn's does
// (controller's classify): "no verdict file was written" alone does not
// say that the model API refused the key.
func classifyFile(res Result, wrote bool, bad error, w FileWords) (walkie.Outcome, string) {
	if out, detail, ok := Stopped(res.Stop, w.Stopped); ok {
		return out, detail
	}
	if wrote && bad == nil {
		return walkie.OutcomeAccepted, EndedAfterGrace(res.Result, w.Written, w.Writer)
	}
	if out, detail, ok := Failure(res.Result, w.File); ok {
		return out, res.Explain(detail)
	}
	if bad != nil {
		return walkie.OutcomeMalformed, res.Explain(bad.Error())
	}
	return walkie.OutcomeNoTurn, res.Explain(w.Missing)
}
