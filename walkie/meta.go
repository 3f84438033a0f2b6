package walkie

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// FormatVersion is the value of the front matter's `walkie:` key this code writes.
const FormatVersion = 1

// DefaultMaxTurnBytes bounds one entry's body unless the front matter says otherwise.
const DefaultMaxTurnBytes = 64 << 10

// SupervisorName is the author of supervisor entries; no participant may use it.
const SupervisorName = "supervisor"

// Meta is the YAML front matter of a walkie file.
type Meta struct {
	Walkie         int      `yaml:"walkie"`
	ID             string   `yaml:"id"`
	Title          string   `yaml:"title,omitempty"`
	Mode           string   `yaml:"mode,omitempty"`
	Participants   []string `yaml:"participants"`
	MaxRounds      int      `yaml:"max_rounds"`
	MaxTurnBytes   int      `yaml:"max_turn_bytes,omitempty"`
	BudgetUSD      float64  `yaml:"budget_usd,omitempty"`
	BriefingSHA256 string   `yaml:"briefing_sha256,omitempty"`
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

// turnLimit is the size bound for one entry's body.
func (m *Meta) turnLimit() int {
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
	for _, f := range []string{"walkie", "id", "title", "mode", "participants", "max_rounds", "max_turn_bytes", "budget_usd", "briefing_sha256"} {
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
		if err := root.Content[i+1].Decode(fieldPtr(&m, k.Value)); err != nil {
			return m, &InputError{File: file, Line: firstLine + root.Content[i+1].Line - 1,
				Msg: fmt.Sprintf("bad value for %q: %s", k.Value, yamlErrMsg(err)), Fix: "see docs/format.md for the front matter keys"}
		}
	}
	return m, m.validate(file, firstLine, lines)
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
	case "max_rounds":
		return &m.MaxRounds
	case "max_turn_bytes":
		return &m.MaxTurnBytes
	case "budget_usd":
		return &m.BudgetUSD
	case "briefing_sha256":
		return &m.BriefingSHA256
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
	if m.Walkie != FormatVersion {
		return bad("walkie", fmt.Sprintf("walkie: %d is not a format this version reads", m.Walkie), "set `walkie: 1`")
	}
	if !idPattern.MatchString(m.ID) {
		return bad("id", fmt.Sprintf("id %q is missing or not a simple name", m.ID), "use letters, digits, '.', '_' or '-', e.g. `id: api-shape`")
	}
	if m.Mode != "" && m.Mode != "debate" && m.Mode != "roundtable" {
		return bad("mode", fmt.Sprintf("mode %q is unknown", m.Mode), "use `debate` or `roundtable`")
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

// renderMeta writes front matter in the canonical key order.
func renderMeta(m Meta) []byte {
	var b bytes.Buffer
	b.WriteString("---\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	// A flow-style participant list reads like the architecture page.
	node := &yaml.Node{}
	_ = node.Encode(m)
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == "participants" {
			node.Content[i+1].Style = yaml.FlowStyle
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
