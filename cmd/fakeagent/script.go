package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// step is everything one invocation does. Flags fill it first; a script's
// top-level settings and then its selected step override what they set.
type step struct {
	Behavior         string        `yaml:"behavior"`
	Body             string        `yaml:"body"`
	Bodies           []string      `yaml:"bodies"`
	Sign             bool          `yaml:"sign"`
	SignFrom         int           `yaml:"sign_from"`
	Chatter          int           `yaml:"chatter"`
	FloodMB          float64       `yaml:"flood_mb"`
	ReadStdin        bool          `yaml:"read_stdin"`
	Ask              string        `yaml:"ask"`
	Delay            time.Duration `yaml:"delay"`
	HangAfter        bool          `yaml:"hang_after"`
	ExitCode         *int          `yaml:"exit_code"`
	Author           string        `yaml:"author"`
	Usage            bool          `yaml:"usage"`
	CostUSD          float64       `yaml:"cost_usd"`
	InputTokens      int           `yaml:"input_tokens"`
	OutputTokens     int           `yaml:"output_tokens"`
	GrandchildSetsid bool          `yaml:"grandchild_setsid"`
	PidFile          string        `yaml:"pid_file"`
	// Round-table stand-ins (roundtable.go).
	Shell       string   `yaml:"shell"`
	Shells      []string `yaml:"shells"`
	Verdict     string   `yaml:"verdict"`
	Verdicts    []string `yaml:"verdicts"`
	VerdictFile string   `yaml:"verdict_file"`
	// Review-thread stand-ins: the body is what a snippet prints (a turn
	// that cites the commit it just made, the branch's head it tested).
	BodyCmd  string   `yaml:"body_cmd"`
	BodyCmds []string `yaml:"body_cmds"`
	// A hostile agent's attempts (hostile.go).
	TryRead  []string `yaml:"try_read"`
	TryWrite []string `yaml:"try_write"`
}

// when is one entry of a script's when: list: conditions on what the agent
// reads, and the settings that apply when every condition given holds
// (the first entry that matches wins, over the selected step). It lets a
// scripted agent react to the work instead of to the round number: a
// reviewer that blocks whenever the answer is not the one it wants, an
// implementer that pleases whoever objected last.
type when struct {
	// File (relative to $WALKIE_WORKSPACE when set, else to the working
	// directory) contains, or lacks, a text.
	File     string `yaml:"file"`
	Contains string `yaml:"contains"`
	Lacks    string `yaml:"lacks"`
	// LastBlocker: the last turn of the walkie file that requests changes
	// (a round-table verdict turn starting "**request changes**") is this
	// agent's.
	LastBlocker string `yaml:"last_blocker"`
	// ID: the walkie file's id matches this regular expression (a copy
	// made by walkie trials has an id of its own).
	ID string `yaml:"id"`
}

// whenFacts is what the conditions of a when entry are checked against.
type whenFacts struct {
	rec       record
	workspace string // $WALKIE_WORKSPACE, or "" for the working directory
}

func (w when) holds(f whenFacts) (bool, error) {
	if w.File != "" || w.Contains != "" || w.Lacks != "" {
		b, err := os.ReadFile(filepath.Join(f.workspace, w.File))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("when: %w", err)
		}
		if w.Contains != "" && !bytes.Contains(b, []byte(w.Contains)) || w.Lacks != "" && bytes.Contains(b, []byte(w.Lacks)) {
			return false, nil
		}
	}
	if w.LastBlocker != "" && f.rec.lastBlocker != w.LastBlocker {
		return false, nil
	}
	if w.ID != "" {
		re, err := regexp.Compile(w.ID)
		if err != nil {
			return false, fmt.Errorf("when: id: %w", err)
		}
		if !re.MatchString(f.rec.id) {
			return false, nil
		}
	}
	return true, nil
}

// applyWhen overlays the first entry of the script's when: list whose
// conditions hold on st.
func applyWhen(st step, data []byte, f whenFacts) (step, error) {
	var doc struct {
		When []yaml.Node `yaml:"when"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return st, fmt.Errorf("script: %w", err)
	}
	for i, n := range doc.When {
		var w when
		if err := n.Decode(&w); err != nil {
			return st, fmt.Errorf("script when %d: %w", i+1, err)
		}
		ok, err := w.holds(f)
		if err != nil || !ok {
			if err != nil {
				return st, err
			}
			continue
		}
		if err := n.Decode(&st); err != nil {
			return st, fmt.Errorf("script when %d: %w", i+1, err)
		}
		return st, st.validate()
	}
	return st, nil
}

// behaviours lists the valid values of step.Behavior.
func validBehavior(b string) bool {
	switch b {
	case "append", "none", "hang", "two-turns", "edit-briefing", "edit-turn",
		"wrong-heading", "wrong-author", "not-logged-in", "grandchild", "write", "verdict":
		return true
	}
	return false
}

// applyScript overlays the script in data on base and returns the step for
// the invocation numbered k (0-based; the last step repeats).
func applyScript(base step, data []byte, k int) (step, error) {
	// First pass: strict, so a misspelt key is an error rather than a
	// silently ignored setting.
	var strict struct {
		step  `yaml:",inline"`
		Steps []step `yaml:"steps"`
		When  []struct {
			when `yaml:",inline"`
			step `yaml:",inline"`
		} `yaml:"when"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&strict); err != nil && !errors.Is(err, io.EOF) {
		return step{}, fmt.Errorf("script: %w", err)
	}
	// Second pass: decoding into a copy of base sets only the keys that
	// are present, which is exactly "the script overrides the flags".
	var doc struct {
		Steps []yaml.Node `yaml:"steps"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return step{}, fmt.Errorf("script: %w", err)
	}
	st := base
	if err := yaml.Unmarshal(data, &st); err != nil {
		return step{}, fmt.Errorf("script: %w", err)
	}
	if n := len(doc.Steps); n > 0 {
		if k >= n {
			k = n - 1
		}
		if err := doc.Steps[k].Decode(&st); err != nil {
			return step{}, fmt.Errorf("script step %d: %w", k+1, err)
		}
	}
	if err := st.validate(); err != nil {
		return step{}, fmt.Errorf("script: %w", err)
	}
	return st, nil
}

func (s step) validate() error {
	if !validBehavior(s.Behavior) {
		return fmt.Errorf("unknown behavior %q", s.Behavior)
	}
	if s.Chatter < 0 || s.FloodMB < 0 || s.Delay < 0 || s.SignFrom < 0 {
		return errors.New("chatter, flood_mb, delay and sign_from must not be negative")
	}
	return nil
}

// nextInvocation returns how many times the agent ran before with this
// state file, and counts this run. No file means no earlier run.
func nextInvocation(path string) (int, error) {
	if path == "" {
		return 0, nil
	}
	k := 0
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if k, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			return 0, fmt.Errorf("state file %s: %w", path, err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return 0, fmt.Errorf("state file: %w", err)
	}
	// Replaced, not rewritten in place: a session ended (SIGTERM, SIGKILL)
	// between truncating and writing would leave an empty count, and
	// every later run would fail on it.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(k+1)+"\n"), 0o644); err != nil {
		return 0, fmt.Errorf("state file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("state file: %w", err)
	}
	return k, nil
}
