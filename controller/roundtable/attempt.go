package roundtable

import (
	"context"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// How the round table's own sessions name things in their outcomes.
var (
	reviewWords = engine.FileWords{Stopped: "review", Written: "verdict recorded", Writer: "reviewer", File: "verdict", Missing: "no verdict file was written"}
	phaseWords  = engine.FileWords{Stopped: "phase's file", Written: "file written", Writer: "agent", File: "file", Missing: "no file was written"}
)

// The kinds of the round table's own file attempts (engine.FileAttempt's
// Kind): what names their check on a machine that runs the session for
// a remote engine (FileCheck).
const (
	KindVerdict = "verdict"
	KindPhase   = "phase"
)

// CheckVerdict refuses a verdict file that does not parse as one
// (docs/roundtable.md, "The verdict").
func CheckVerdict(b []byte) error { _, err := parseVerdict(b); return err }

// FileCheck is the check of a file attempt of kind, for a machine that
// runs the session for a remote engine.
func FileCheck(kind string) (func([]byte) error, bool) {
	switch kind {
	case KindVerdict:
		return CheckVerdict, true
	case KindPhase:
		return CheckPhase, true
	}
	return nil, false
}

// runFile runs a file attempt with the host's RunFile (a remote engine's),
// else with the engine here.
func (rt *Table) runFile(ctx context.Context, fa engine.FileAttempt) (engine.FileResult, error) {
	if rt.RunFile != nil {
		return rt.RunFile(ctx, fa)
	}
	return rt.Engine.RunFile(ctx, fa)
}

// fileAttempt is what every session of the round table's own (a phase, a
// reviewer) shares as a file attempt: the host's session slots, a note
// under running/NAME.json while it runs (recoverReviewers), its line in
// the debate's log with its cost charged to the debate in it, whatever
// that cost is (known or not: issue 26).
func (rt *Table) fileAttempt(running string, rec engine.TurnRecord) engine.FileAttempt {
	return engine.FileAttempt{
		Record:   rec,
		Acquire:  rt.Acquire,
		StateDir: rt.Dir,
		Debate:   rt.File,
		Note: func(id, sandbox string) (func(), error) {
			if err := rt.noteStarting(running, id, sandbox); err != nil {
				return nil, err
			}
			return func() { rt.forgetRunning(running) }, nil
		},
	}
}

// recorded tells the log and the run's observer that an attempt (what:
// "phase", "review") is in the turn log.
func (rt *Table) recorded(what string, rec engine.TurnRecord) {
	rt.Log.Info(what+" recorded", zap.Int("round", rec.Round), zap.String("agent", rec.Agent), zap.String("role", rec.Role), zap.Int("attempt", rec.Attempt),
		zap.String("outcome", string(rec.Outcome)), zap.String("detail", rec.Detail), zap.Int64("duration_ms", rec.DurationMS))
	rt.Emit(engine.Event{Kind: engine.EventTurnRecorded, Turn: rec.Turn, Round: rec.Round, Agent: rec.Agent, Attempt: rec.Attempt, Record: &rec, Status: walkie.StatusOpen})
}
