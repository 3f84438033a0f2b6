package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Vars are the values substituted for placeholders in an agent's command,
// working directory and environment values.
type Vars struct {
	Prompt string // {prompt}: the rendered prompt
	File   string // {file}: the walkie file's path
	Agent  string // {agent}: the agent's name
	Dir    string // {dir}: the walkie file's directory
	Turn   int    // {turn}: the turn number being written
	Round  int    // {round}: the round number
}

// Placeholders are the names that may appear in braces. {model} and
// {effort} are the agent's own Model and Effort; the rest come from Vars.
var Placeholders = []string{"prompt", "file", "agent", "turn", "round", "dir", "model", "effort"}

// Argv returns the command with placeholders substituted in each element.
// Each element stays one argument: no shell, no splitting, no quoting, so a
// prompt with spaces, quotes or newlines reaches the program unchanged.
func (a Agent) Argv(v Vars) ([]string, error) {
	if len(a.Command) == 0 {
		return nil, fmt.Errorf("config: agent %q has no command", a.Name)
	}
	out := make([]string, len(a.Command))
	for i, arg := range a.Command {
		s, err := a.expand(arg, v)
		if err != nil {
			return nil, fmt.Errorf("config: agent %q: command[%d]: %w", a.Name, i, err)
		}
		out[i] = s
	}
	return out, nil
}

// WorkDir returns the working directory with placeholders substituted.
func (a Agent) WorkDir(v Vars) (string, error) {
	s, err := a.expand(cmp.Or(a.Dir, DefaultDir), v)
	if err != nil {
		return "", fmt.Errorf("config: agent %q: dir: %w", a.Name, err)
	}
	return s, nil
}

// EnvVars returns the agent's own environment entries ("K=V", sorted) with
// placeholders substituted. Which of the caller's variables pass through
// (EnvAllow), HOME and TMPDIR are the session's business, not config's.
func (a Agent) EnvVars(v Vars) ([]string, error) {
	out := make([]string, 0, len(a.Env))
	for k, val := range a.Env {
		s, err := a.expand(val, v)
		if err != nil {
			return nil, fmt.Errorf("config: agent %q: env.%s: %w", a.Name, k, err)
		}
		out = append(out, k+"="+s)
	}
	slices.Sort(out)
	return out, nil
}

func (a Agent) expand(s string, v Vars) (string, error) {
	return expand(s, func(name string) (string, bool) {
		switch name {
		case "prompt":
			return v.Prompt, true
		case "file":
			return v.File, true
		case "agent":
			return v.Agent, true
		case "dir":
			return v.Dir, true
		case "turn":
			return strconv.Itoa(v.Turn), true
		case "round":
			return strconv.Itoa(v.Round), true
		case "model":
			return a.Model, true
		case "effort":
			return a.Effort, true
		}
		return "", false
	})
}

// expand replaces every {name} whose name is lower-case letters and
// underscores. Other braces ({"json": 1}, {}, {A}) are left as they are, so
// JSON and shell-like text in arguments need no escaping.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "{") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := strings.IndexByte(s, '}')
		name := ""
		if j > 1 {
			name = s[1:j]
		}
		if !isPlaceholderName(name) {
			b.WriteByte('{')
			s = s[1:]
			continue
		}
		val, ok := lookup(name)
		if !ok {
			return "", unknownPlaceholder(name)
		}
		b.WriteString(val)
		s = s[j+1:]
	}
}

func unknownPlaceholder(name string) error {
	msg := fmt.Sprintf("unknown placeholder {%s}", name)
	if sug := suggest(name, Placeholders); sug != "" {
		msg += fmt.Sprintf(" (did you mean {%s}?)", sug)
	}
	return fmt.Errorf("%s; known: {%s}", msg, strings.Join(Placeholders, "} {"))
}

func isPlaceholderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && r != '_' {
			return false
		}
	}
	return true
}

// checkPlaceholders reports the first unknown placeholder in s, if any.
func checkPlaceholders(s string) error {
	_, err := expand(s, func(name string) (string, bool) {
		return "", slices.Contains(Placeholders, name)
	})
	return err
}
