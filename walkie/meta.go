package walkie

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// FormatVersion is the value of the front matter's `walkie:` key this code
// writes for a file without phases.
const FormatVersion = 1

// FormatPhases is the format that adds a round table's phases: a file
// that declares them says `walkie: 2`, so an older walkie refuses it by
// its version instead of running the round table without them.
const FormatPhases = 2

// Phase kinds, in the order they run: research writes notes on the exact
// rules of the problem, plan turns the briefing (and the notes) into the
// spec the implementer builds to and the reviewers cite.
const (
	PhaseResearch = "research"
	PhasePlan     = "plan"
)

// PhaseKinds lists the phase kinds in their order.
var PhaseKinds = []string{PhaseResearch, PhasePlan}

// Phase is one step before a round table's first round: a fresh session
// of Agent, with the phase's own pinned prompt, that writes one file for a
// person to approve. In the front matter it is `{KIND: AGENT}`.
type Phase struct {
	Kind  string
	Agent string
	line  int // where it is declared, for messages
}

// MarshalYAML writes the phase as the front matter declares it.
func (p Phase) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	n.Content = []*yaml.Node{{Kind: yaml.ScalarNode, Value: p.Kind}, {Kind: yaml.ScalarNode, Value: p.Agent}}
	return n, nil
}

// DefaultMaxTurnBytes bounds one entry's body unless the front matter says otherwise.
const DefaultMaxTurnBytes = 64 << 10

// SupervisorName is the author of supervisor entries; no participant may use it.
const SupervisorName = "supervisor"

// Modes of a walkie file.
const (
	ModeDebate     = "debate"     // participants take turns until all sign off (the default)
	ModeRoundtable = "roundtable" // one implementer, reviewers judging a frozen copy, a hidden grader
)

// DefaultGraderTimeout bounds a round table's grader unless grader_timeout says otherwise.
const DefaultGraderTimeout = 10 * time.Minute

// Meta is the YAML front matter of a walkie file.
type Meta struct {
	Walkie       int      `yaml:"walkie"`
	ID           string   `yaml:"id"`
	Title        string   `yaml:"title,omitempty"`
	Mode         string   `yaml:"mode,omitempty"`
	Participants []string `yaml:"participants"`
	// People are the participants who are persons: walkie never runs
	// them, and waits for their posts. A participant that is neither a
	// configured agent nor a person (here or in the config's people:) is
	// refused, so a misspelt agent cannot pass for a person.
	People []string `yaml:"people,omitempty"`
	// Supervisor names the person who supervises the debate: who may
	// halt, resume, extend, note and approve from Telegram, and who is
	// told when walkie gives up waiting. Entries still read ## Supervisor.
	Supervisor string `yaml:"supervisor,omitempty"`
	// Round-table keys (mode: roundtable only; docs/roundtable.md). The
	// participants are then the implementer followed by the reviewers.
	Implementer   string        `yaml:"implementer,omitempty"`
	Reviewers     []string      `yaml:"reviewers,omitempty"`
	Quorum        int           `yaml:"quorum,omitempty"` // approvals needed; 0 = every reviewer
	Grader        Command       `yaml:"grader,omitempty"`
	GraderTimeout time.Duration `yaml:"grader_timeout,omitempty"`
	Workspace     string        `yaml:"workspace,omitempty"` // relative to the file's directory
	// Phases run before the first round, in order (format 2).
	Phases         []Phase `yaml:"phases,omitempty"`
	MaxRounds      int     `yaml:"max_rounds"`
	MaxTurnBytes   int     `yaml:"max_turn_bytes,omitempty"`
	BudgetUSD      float64 `yaml:"budget_usd,omitempty"`
	BriefingSHA256 string  `yaml:"briefing_sha256,omitempty"`
	// Review-thread keys (format 3; review_meta.go, docs/review-threads.md).
	Repo          string    `yaml:"repo,omitempty"`
	RequireRefs   *[]string `yaml:"require_refs,omitempty"`
	FreshVerdicts *bool     `yaml:"fresh_verdicts,omitempty"`
	Git           string    `yaml:"git,omitempty"`
	Base          string    `yaml:"base,omitempty"`
	// Test is the thread's test command: a verdict that says how many
	// tests pass is held to what it prints at the cited commit, each line
	// matching TestPassed one passing test (review_meta.go).
	Test        Command       `yaml:"test,omitempty"`
	TestPassed  string        `yaml:"test_passed,omitempty"`
	TestTimeout time.Duration `yaml:"test_timeout,omitempty"`
}

// Command is a command given in the front matter: a YAML list is an argv
// run as it is; a string is a script run by /bin/sh -c.
type Command struct {
	Argv  []string
	Shell string
}

// IsZero reports whether no command was given.
func (c Command) IsZero() bool { return len(c.Argv) == 0 && c.Shell == "" }

// String shows the command as the front matter gives it.
func (c Command) String() string {
	if c.Shell != "" {
		return c.Shell
	}
	return strings.Join(c.Argv, " ")
}

// UnmarshalYAML accepts a string or a list of strings.
func (c *Command) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*c = Command{Shell: n.Value}
		return nil
	case yaml.SequenceNode:
		var argv []string
		if err := n.Decode(&argv); err != nil {
			return err
		}
		*c = Command{Argv: argv}
		return nil
	}
	return fmt.Errorf("want a string (run by /bin/sh -c) or a list (an argv)")
}

// MarshalYAML writes the form the command was given in.
func (c Command) MarshalYAML() (any, error) {
	if c.Shell != "" {
		return c.Shell, nil
	}
	n := &yaml.Node{}
	if err := n.Encode(c.Argv); err != nil {
		return nil, err
	}
	n.Style = yaml.FlowStyle
	return n, nil
}

// IsRoundtable reports whether the file is a round table.
func (m *Meta) IsRoundtable() bool { return m.Mode == ModeRoundtable }

// QuorumNeeded is how many reviewers must approve: quorum, or all of them.
func (m *Meta) QuorumNeeded() int {
	if m.Quorum > 0 {
		return m.Quorum
	}
	return len(m.Reviewers)
}

// GraderLimit is the grader's timeout.
func (m *Meta) GraderLimit() time.Duration {
	if m.GraderTimeout > 0 {
		return m.GraderTimeout
	}
	return DefaultGraderTimeout
}

var (
	idPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`)
	hexDigest   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// ValidName reports whether s can name a participant.
func ValidName(s string) bool {
	return namePattern.MatchString(s) && s != SupervisorName
}

// TurnLimit is the size bound for one entry's body: max_turn_bytes, or the default.
func (m *Meta) TurnLimit() int {
	if m.MaxTurnBytes > 0 {
		return m.MaxTurnBytes
	}
	return DefaultMaxTurnBytes
}

// parseMeta decodes and validates front matter. src is the YAML between the
// fences; firstLine is the file line of its first byte, so errors point at
// the right line.
func parseMeta(file string, src []byte, firstLine int) (Meta, error) {
	var m Meta
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return m, &InputError{File: file, Line: firstLine + yamlErrLine(err) - 1,
			Msg: "front matter is not valid YAML: " + yamlErrMsg(err), Fix: "fix the YAML between the --- lines"}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return m, &InputError{File: file, Line: firstLine, Msg: "front matter is not a YAML mapping",
			Fix: "write key: value lines between the --- fences"}
	}
	root := doc.Content[0]
	known := map[string]bool{}
	for _, f := range []string{"walkie", "id", "title", "mode", "participants", "people", "supervisor", "max_rounds", "max_turn_bytes", "budget_usd", "briefing_sha256",
		"implementer", "reviewers", "quorum", "grader", "grader_timeout", "workspace", "phases",
		"repo", "require_refs", "fresh_verdicts", "git", "base", "test", "test_passed", "test_timeout"} {
		known[f] = true
	}
	lines := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if !known[k.Value] {
			return m, &InputError{File: file, Line: firstLine + k.Line - 1,
				Msg: fmt.Sprintf("unknown front matter key %q", k.Value), Fix: "remove it; known keys: " + strings.Join(sortedKeys(known), ", ")}
		}
		if _, dup := lines[k.Value]; dup {
			return m, &InputError{File: file, Line: firstLine + k.Line - 1, Msg: fmt.Sprintf("key %q appears twice", k.Value), Fix: "keep one"}
		}
		lines[k.Value] = firstLine + k.Line - 1
		if k.Value == "phases" {
			ps, err := decodePhases(file, firstLine, root.Content[i+1])
			if err != nil {
				return m, err
			}
			m.Phases = ps
			continue
		}
		if err := root.Content[i+1].Decode(fieldPtr(&m, k.Value)); err != nil {
			return m, &InputError{File: file, Line: firstLine + root.Content[i+1].Line - 1,
				Msg: fmt.Sprintf("bad value for %q: %s", k.Value, yamlErrMsg(err)), Fix: "see docs/format.md for the front matter keys"}
		}
	}
	// validate fills in a round table's participants, so it runs before m
	// is returned, not in the same return statement.
	err := m.validate(file, firstLine, lines)
	return m, err
}

func fieldPtr(m *Meta, key string) any {
	switch key {
	case "walkie":
		return &m.Walkie
	case "id":
		return &m.ID
	case "title":
		return &m.Title
	case "mode":
		return &m.Mode
	case "participants":
		return &m.Participants
	case "people":
		return &m.People
	case "supervisor":
		return &m.Supervisor
	case "max_rounds":
		return &m.MaxRounds
	case "max_turn_bytes":
		return &m.MaxTurnBytes
	case "budget_usd":
		return &m.BudgetUSD
	case "briefing_sha256":
		return &m.BriefingSHA256
	case "implementer":
		return &m.Implementer
	case "reviewers":
		return &m.Reviewers
	case "quorum":
		return &m.Quorum
	case "grader":
		return &m.Grader
	case "grader_timeout":
		return &m.GraderTimeout
	case "workspace":
		return &m.Workspace
	case "repo":
		return &m.Repo
	case "require_refs":
		return &m.RequireRefs
	case "fresh_verdicts":
		return &m.FreshVerdicts
	case "git":
		return &m.Git
	case "base":
		return &m.Base
	case "test":
		return &m.Test
	case "test_passed":
		return &m.TestPassed
	case "test_timeout":
		return &m.TestTimeout
	}
	panic("fieldPtr: unhandled key " + key)
}

func (m *Meta) validate(file string, firstLine int, lines map[string]int) error {
	at := func(key string) int {
		if l, ok := lines[key]; ok {
			return l
		}
		return firstLine
	}
	bad := func(key, msg, fix string) error {
		return &InputError{File: file, Line: at(key), Msg: msg, Fix: fix}
	}
	if m.Walkie < FormatVersion || m.Walkie > FormatCompact {
		return bad("walkie", fmt.Sprintf("walkie: %d is not a format this version reads", m.Walkie),
			"set `walkie: 4` before the first entry (compact markers; `walkie init` writes it), or keep the format the file was created with: 1, 2 for a round table with phases, 3 for typed entries and review threads")
	}
	if !idPattern.MatchString(m.ID) {
		return bad("id", fmt.Sprintf("id %q is missing or not a simple name", m.ID), "use letters, digits, '.', '_' or '-', e.g. `id: api-shape`")
	}
	if m.Mode != "" && m.Mode != "debate" && m.Mode != "roundtable" {
		return bad("mode", fmt.Sprintf("mode %q is unknown", m.Mode), "use `debate` or `roundtable`")
	}
	if err := m.validateRoundtable(bad); err != nil {
		return err
	}
	if err := m.validatePhases(file, bad); err != nil {
		return err
	}
	if err := m.validateReview(bad); err != nil {
		return err
	}
	if len(m.Participants) < 2 {
		return bad("participants", "a debate needs at least two participants", "list them in turn order, e.g. `participants: [claude, codex]`")
	}
	seen := map[string]bool{}
	for _, p := range m.Participants {
		if !ValidName(p) {
			return bad("participants", fmt.Sprintf("participant %q is not a valid name", p), "use letters, digits, '.', '_' or '-' (and not \"supervisor\")")
		}
		if seen[p] {
			return bad("participants", fmt.Sprintf("participant %q is listed twice", p), "list each participant once")
		}
		seen[p] = true
	}
	if err := m.validatePeople(bad); err != nil {
		return err
	}
	if m.MaxRounds < 1 {
		return bad("max_rounds", "max_rounds must be at least 1", "set e.g. `max_rounds: 6`")
	}
	if m.MaxTurnBytes < 0 {
		return bad("max_turn_bytes", "max_turn_bytes cannot be negative", "remove it for the default (65536)")
	}
	if m.BudgetUSD < 0 {
		return bad("budget_usd", "budget_usd cannot be negative", "remove it for no budget")
	}
	if m.BriefingSHA256 != "" && !hexDigest.MatchString(m.BriefingSHA256) {
		return bad("briefing_sha256", "briefing_sha256 is not a sha256 hex digest", "run `walkie brief approve FILE` to set it")
	}
	return nil
}

// validatePeople checks people: and supervisor:: every person is a
// participant of a debate (a round table's parties are sessions walkie
// runs), and the supervisor is a name of its own, not a participant.
func (m *Meta) validatePeople(bad func(key, msg, fix string) error) error {
	if len(m.People) > 0 && m.IsRoundtable() {
		return bad("people", "a round table's implementer and reviewers are agents walkie runs, never people", "remove people: (a person supervises: supervisor: NAME)")
	}
	for i, p := range m.People {
		switch {
		case !slices.Contains(m.Participants, p):
			return bad("people", fmt.Sprintf("%q is in people: but not a participant", p), fmt.Sprintf("list the participants who are people, of [%s]", strings.Join(m.Participants, ", ")))
		case slices.Contains(m.People[:i], p):
			return bad("people", fmt.Sprintf("%q is listed twice in people:", p), "list each person once")
		}
	}
	if s := m.Supervisor; s != "" {
		switch {
		case !ValidName(s):
			return bad("supervisor", fmt.Sprintf("supervisor %q is not a valid name", s), "use letters, digits, '.', '_' or '-' (the word \"supervisor\" itself is the role, not a name)")
		case slices.Contains(m.Participants, s):
			return bad("supervisor", fmt.Sprintf("%s is a participant and cannot also supervise", s), "name a person who takes no turn")
		}
	}
	return nil
}

// IsPerson reports whether the front matter declares participant a
// person.
func (m *Meta) IsPerson(participant string) bool { return slices.Contains(m.People, participant) }

// validateRoundtable checks the round-table keys: present only in that
// mode, and consistent there. It derives the participants (implementer
// first, then the reviewers: the order turns are taken in each round) when
// the file does not list them.
func (m *Meta) validateRoundtable(bad func(key, msg, fix string) error) error {
	if !m.IsRoundtable() {
		for _, k := range []struct {
			key string
			set bool
		}{{"implementer", m.Implementer != ""}, {"reviewers", m.Reviewers != nil}, {"quorum", m.Quorum != 0},
			{"grader", !m.Grader.IsZero()}, {"grader_timeout", m.GraderTimeout != 0}, {"workspace", m.Workspace != "" && m.Workspace != WorkspaceWorktree}, {"phases", len(m.Phases) > 0}} {
			if k.set {
				return bad(k.key, fmt.Sprintf("%s is a round-table key", k.key), "add `mode: roundtable`, or remove it")
			}
		}
		return nil
	}
	if !ValidName(m.Implementer) {
		return bad("implementer", fmt.Sprintf("implementer %q is missing or not a valid name", m.Implementer), "name the agent that changes the workspace, e.g. `implementer: claude`")
	}
	if len(m.Reviewers) == 0 {
		return bad("reviewers", "a round table needs at least one reviewer", "list them, e.g. `reviewers: [codex, gemini]`")
	}
	for i, r := range m.Reviewers {
		switch {
		case !ValidName(r):
			return bad("reviewers", fmt.Sprintf("reviewer %q is not a valid name", r), "use letters, digits, '.', '_' or '-' (and not \"supervisor\")")
		case r == m.Implementer:
			return bad("reviewers", fmt.Sprintf("%s is the implementer and cannot review its own work", r), "list other agents as reviewers")
		case slices.Contains(m.Reviewers[:i], r):
			return bad("reviewers", fmt.Sprintf("reviewer %q is listed twice", r), "list each reviewer once")
		}
	}
	order := append([]string{m.Implementer}, m.Reviewers...)
	if m.Participants == nil {
		m.Participants = order
	} else if !slices.Equal(m.Participants, order) {
		return bad("participants", fmt.Sprintf("participants [%s] do not match the round table's order [%s]", strings.Join(m.Participants, ", "), strings.Join(order, ", ")),
			"remove participants (it is derived: the implementer, then the reviewers)")
	}
	if m.Quorum < 0 || m.Quorum > len(m.Reviewers) {
		return bad("quorum", fmt.Sprintf("quorum %d is not between 1 and the number of reviewers (%d)", m.Quorum, len(m.Reviewers)), "remove it to require every reviewer")
	}
	if m.Grader.IsZero() || strings.TrimSpace(m.Grader.String()) == "" || (m.Grader.Shell == "" && m.Grader.Argv[0] == "") {
		return bad("grader", "a round table needs a grader command", "e.g. `grader: [make, test]` or `grader: \"go test ./...\"` (a string runs under /bin/sh -c)")
	}
	if m.GraderTimeout < 0 {
		return bad("grader_timeout", "grader_timeout cannot be negative", "remove it for the default (10m)")
	}
	if strings.TrimSpace(m.Workspace) == "" {
		return bad("workspace", "a round table needs a workspace", "name the directory the implementer changes, relative to this file, e.g. `workspace: src`")
	}
	return nil
}

// decodePhases reads `phases:`, a list of `{KIND: AGENT}` mappings, each
// error at the line of the item that has it.
func decodePhases(file string, firstLine int, n *yaml.Node) ([]Phase, error) {
	bad := func(at *yaml.Node, msg, fix string) error {
		return &InputError{File: file, Line: firstLine + at.Line - 1, Msg: msg, Fix: fix}
	}
	const shape = "write one `- KIND: AGENT` per phase, e.g. `phases: [{research: gemini}, {plan: claude}]`"
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, bad(n, "phases is not a list", shape)
	}
	var out []Phase
	for i, item := range n.Content {
		if item.Kind != yaml.MappingNode || len(item.Content) != 2 || item.Content[0].Kind != yaml.ScalarNode || item.Content[1].Kind != yaml.ScalarNode {
			return nil, bad(item, fmt.Sprintf("phase %d is not one KIND: AGENT pair", i+1), shape)
		}
		out = append(out, Phase{Kind: item.Content[0].Value, Agent: item.Content[1].Value, line: firstLine + item.Line - 1})
	}
	return out, nil
}

// validatePhases checks the phases: a round table's, in format 2, each a
// known kind played by a valid agent name, each kind once, in the order
// the kinds run.
func (m *Meta) validatePhases(file string, bad func(key, msg, fix string) error) error {
	if len(m.Phases) == 0 {
		return nil
	}
	if m.Walkie < FormatPhases {
		return bad("phases", fmt.Sprintf("phases need format %d, and this file says walkie: %d", FormatPhases, m.Walkie),
			fmt.Sprintf("set `walkie: %d` (an older walkie then refuses the file instead of skipping its phases)", FormatPhases))
	}
	at := func(p Phase, msg, fix string) error {
		err := bad("phases", msg, fix).(*InputError)
		if p.line > 0 {
			err.Line = p.line
		}
		return err
	}
	last := -1
	for _, p := range m.Phases {
		k := slices.Index(PhaseKinds, p.Kind)
		switch {
		case k < 0:
			return at(p, fmt.Sprintf("phase %q is not a kind walkie knows", p.Kind), "use "+strings.Join(PhaseKinds, " or ")+", e.g. `- research: gemini`")
		case !ValidName(p.Agent):
			return at(p, fmt.Sprintf("the %s phase's agent %q is not a valid name", p.Kind, p.Agent), "name a configured agent or preset, e.g. `- "+p.Kind+": claude`")
		case k == last:
			return at(p, fmt.Sprintf("the %s phase is listed twice", p.Kind), "list each phase once")
		case k < last:
			return at(p, fmt.Sprintf("the %s phase comes after the %s phase", p.Kind, PhaseKinds[last]), "list them in the order they run: "+strings.Join(PhaseKinds, ", then "))
		}
		last = k
	}
	return nil
}

// renderMeta writes front matter in the canonical key order.
func renderMeta(m Meta) []byte {
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	// A flow-style participant list reads like docs/format.md's example.
	node := &yaml.Node{}
	_ = node.Encode(m)
	for i := 0; i+1 < len(node.Content); i += 2 {
		if v := node.Content[i].Value; v == "reviewers" || v == "people" {
			node.Content[i+1].Style = yaml.FlowStyle
		}
		if node.Content[i].Value == "participants" {
			node.Content[i+1].Style = yaml.FlowStyle
			if m.IsRoundtable() {
				// Derived from implementer and reviewers: not written.
				node.Content = slices.Delete(node.Content, i, i+2)
				i -= 2
			}
		}
	}
	_ = enc.Encode(node)
	_ = enc.Close()
	b.WriteString("---\n")
	return b.Bytes()
}

var yamlLineRe = regexp.MustCompile(`line (\d+)`)

func yamlErrLine(err error) int {
	if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil {
		var n int
		fmt.Sscanf(m[1], "%d", &n)
		return n
	}
	return 1
}

func yamlErrMsg(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	return yamlLineRe.ReplaceAllString(s, "")
}

func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}
