package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// UndeclaredError is a participant that is neither an agent walkie can
// run nor a person declared as one: most likely a misspelt agent, which
// must not be taken for a person and waited for in vain.
type UndeclaredError struct {
	File        string
	Participant string
	Suggestion  string // the likeliest agent or person meant, or ""
	// Known are the agents and people there are, listed when no name
	// is close.
	Known []string
}

func (e *UndeclaredError) Error() string {
	s := fmt.Sprintf("participant %q of %s is neither an agent in the config nor a declared person", e.Participant, e.File)
	if e.Suggestion != "" {
		s += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
	} else if len(e.Known) > 0 {
		s += "; agents and people here: " + strings.Join(e.Known, ", ")
	}
	return s + ": fix the name, add the agent under agents: in walkie.yaml, or, if a person plays it, declare it (people: in the front matter or in walkie.yaml; walkie init --people NAME)"
}

// Is makes an UndeclaredError bad input, as every such error is.
func (e *UndeclaredError) Is(target error) bool { return target == ErrBadInput }

// isPerson reports whether participant is a person: declared so in the
// debate's front matter or in the config's people:. A declared person is
// never run, even where an agent of the same name exists: that is how a
// live session of an agent CLI takes part by walkie post.
func isPerson(m *walkie.Meta, cfg *config.Config, participant string) bool {
	return m.IsPerson(participant) || cfg.IsPerson(participant)
}

// undeclared is the error for a participant that no agent plays and that
// is no declared person, with the likeliest name meant.
func undeclared(file string, m *walkie.Meta, cfg *config.Config, cast map[string]string, participant string) *UndeclaredError {
	name := participant
	if n, ok := cast[participant]; ok {
		name = n
	}
	candidates := cfg.AgentNames()
	for p := range cfg.People {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, m.People...)
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)
	return &UndeclaredError{File: file, Participant: participant, Suggestion: config.Suggest(name, candidates), Known: candidates}
}

// CheckParticipants refuses a debate with a participant that is neither
// an agent (through cast) nor a declared person: what walkie init, auto,
// turn and doctor say before anything runs.
func CheckParticipants(file string, m *walkie.Meta, cfg *config.Config, cast map[string]string) error {
	if cfg == nil {
		cfg = config.Default()
	}
	for _, p := range m.Participants {
		if isPerson(m, cfg, p) {
			continue
		}
		if _, err := agentFor(cfg, cast, p); err != nil {
			return undeclared(file, m, cfg, cast, p)
		}
	}
	return nil
}
