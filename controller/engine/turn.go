package engine

import (
	"context"
	"path/filepath"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// TurnAttempt is one attempt at a debate turn as the unit that runs where
// the agent's CLI is: the record as it stood, who writes which turn, with
// which prompt. Locally File is the record itself; a remote worker gives a
// copy of Before and sends the file back as the agent left it. Judging the
// result and writing the record stay with whoever owns the file.
type TurnAttempt struct {
	// File is where the record is; the agent appends its turn there.
	File string
	// Before is the record as it stood before the attempt: the session is
	// ended once a valid turn on top of it is in and quiet.
	Before               []byte
	Turn, Round, Attempt int
	Participant          string
	Agent                config.Agent
	// Prompt is the pinned prompt, rendered for File.
	Prompt string
	// StateDir gets the transcripts (TranscriptBase).
	StateDir string
	// Dir and Env, when set, are as in Job: the session's own working
	// directory (a git worktree of its own) and what it is told of it.
	Dir string
	Env []string
	// Role and Reach: as in Job; "" is a debater's.
	Role  string
	Reach session.Reach
	// ID, Control and Halted, Started and Output: as in Job.
	ID      string
	Control string
	Halted  func() bool
	Started func(*session.Session)
	Output  func(line string)
}

// RunTurn runs the agent's session for a turn. The error is for a session
// that never ran; everything about one that did is in the result.
func (e *Engine) RunTurn(ctx context.Context, a TurnAttempt) (Result, error) {
	return e.Run(ctx, a.job())
}

// job is the attempt as the engine's job.
func (a TurnAttempt) job() Job {
	expect := walkie.Expect{Turn: a.Turn, Agent: a.Participant}
	if a.Dir != "" {
		// A turn in a worktree of its own may change code: its CLI keeps
		// its own instructions for that (config.RoleInstructions).
		a.Agent.Instructions = ""
	}
	return Job{
		Agent:      a.Agent,
		Vars:       config.Vars{Prompt: a.Prompt, File: a.File, Agent: a.Participant, Dir: filepath.Dir(a.File), Turn: a.Turn, Round: a.Round},
		Dir:        a.Dir,
		Env:        a.Env,
		Transcript: TranscriptBase(a.StateDir, a.Turn, a.Participant, a.Attempt),
		Result:     a.File,
		Ready:      func() bool { return walkie.TurnIsIn(a.File, a.Before, expect) },
		Done:       "the turn is in",
		ID:         a.ID,
		Control:    a.Control,
		Halted:     a.Halted,
		Started:    a.Started,
		Output:     a.Output,
		Role:       a.Role,
		Reach:      a.Reach,
	}
}
