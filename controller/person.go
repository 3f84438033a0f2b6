package controller

import (
	"context"
	"fmt"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/walkie"
)

// What a person does to a debate from anywhere: the CLI, an MCP host,
// a Telegram chat. Each goes through the same writer and the same rules
// as walkie post, halt, resume and extend, so no door is wider than
// another.

// Post records a person's entry through the enforced writer (the same
// judge and the same chain as walkie post), with the debate's named
// supervisor writing a supervisor entry, and makes it a commit of the
// record where the record says so. warning, when not nil, is a commit
// that failed: the entry is recorded, and the next commit catches up.
func Post(ctx context.Context, file string, p walkie.Post) (rc walkie.Receipt, warning error, err error) {
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return rc, nil, err
	}
	if p.From != "" && p.From == meta.Supervisor {
		p.From, p.Supervisor = "", true
	}
	if rc, err = walkie.Append(file, p); err != nil {
		return rc, nil, err
	}
	if !rc.Queued && meta.CommitsEntries() {
		if _, cerr := gitrepo.CommitEntries(ctx, file); cerr != nil {
			warning = fmt.Errorf("git: commit: %w (the entry is recorded; the next commit catches up)", cerr)
		}
	}
	return rc, warning, nil
}

// Resume lifts a halt, or reopens a failed, over-budget or deadlocked
// debate, as walkie resume does. A debate with nothing to resume is left
// as it is, and note says why; one at its round cap is refused: it needs
// more rounds (walkie extend), not a resume.
func Resume(file string, cfg *config.Config) (note string, err error) {
	d, err := walkie.Load(file)
	if err != nil {
		return "", err
	}
	s, err := ReadStanding(d, StandingOptions{Config: cfg})
	if err != nil {
		return "", err
	}
	switch s.Status {
	case walkie.StatusConverged:
		return fmt.Sprintf("%s converged in round %d: there is nothing to resume (walkie show %s reads it)", file, s.Round, file), nil
	case walkie.StatusClosed:
		return fmt.Sprintf("%s was closed %s: there is nothing to resume (start another thread with walkie thread new)", file, s.Reason), nil
	case walkie.StatusOpen:
		return fmt.Sprintf("%s is open, not halted: there is nothing to resume (walkie auto %s runs it)", file, file), nil
	case walkie.StatusMaxRounds:
		return "", &walkie.RefusedError{Op: "resume", Reason: fmt.Sprintf("%s ended at its round cap (%d): walkie extend %s --rounds N adds rounds", file, s.RoundCap, file)}
	}
	if err := walkie.Resume(file); err != nil {
		return "", err
	}
	return "resumed " + file, nil
}
