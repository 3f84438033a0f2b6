package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is one problem in a config file, at a line and key.
type Error struct {
	File string // as given to Parse; "" for the built-in defaults
	Line int    // 1-based; 0 when unknown
	Key  string // dotted path, e.g. agents.claude.timeout; "" for the file as a whole
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config ")
	b.WriteString(cmp.Or(e.File, "(built-in)"))
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// maxErrors bounds how many problems one Parse reports.
const maxErrors = 20

// maxNodes bounds how many YAML nodes one Parse visits, so aliases that
// expand to a huge tree ("billion laughs") fail fast instead of eating memory.
const maxNodes = 100_000

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse parses and validates a config file's contents; path is used in
// messages and kept as Config.Path. Empty data gives the built-in defaults.
func Parse(path string, data []byte) (*Config, error) {
	d := &decoder{file: path}
	c := &Config{
		Path:       path,
		Defaults:   builtinDefaults(),
		Prompts:    defaultPrompts(),
		Roundtable: defaultRoundtablePrompts(),
		Pricing:    defaultPricing(),
		Notify:     Notify{Telegram: Telegram{TokenEnv: DefaultTokenEnv, APIURL: DefaultTelegram}},
		Sandbox:    map[string]Sandboxing{},
	}

	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, d.yamlError(err)
	}
	// A second document would be silently ignored; say so instead.
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		if len(extra.Content) > 0 && !isNull(extra.Content[0]) {
			return nil, &Error{File: d.file, Line: extra.Content[0].Line, Msg: "a second YAML document (after ---); put everything in one"}
		}
	} else if !errors.Is(err, io.EOF) {
		return nil, d.yamlError(err)
	}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	if root != nil && root.Kind != yaml.MappingNode && !isNull(root) {
		d.errorf(root, "", "the file must be a mapping of keys (%s), not %s", strings.Join(topKeys, ", "), kindName(root))
		return nil, errors.Join(d.errs...)
	}

	// The sections are decoded in topLevel's order, not the file's, and
	// also when absent (agents: then still holds the presets).
	sections := map[string]*yaml.Node{}
	d.mapping(root, "", topKeys, func(key string, _, v *yaml.Node) { sections[key] = v })
	for _, f := range topLevel(c) {
		f.decode(d, sections[f.key], f.key)
	}

	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	return c, nil
}

// A decodeFunc decodes the value v, found at the dotted path p, into the
// place it was made for. A null v leaves that place as it was.
type decodeFunc func(d *decoder, v *yaml.Node, p string)

// A field is one key of a section: its name and how its value is decoded
// into the struct the section fills.
type field struct {
	key    string
	decode decodeFunc
}

// fields is one section's table. Its order is the order messages list the
// keys in.
type fields []field

func (fs fields) keys() []string {
	keys := make([]string, len(fs))
	for i, f := range fs {
		keys[i] = f.key
	}
	return keys
}

// section decodes a mapping by a table, key by key in the file's order: a
// key the table lacks is reported with the likeliest one it has.
func section(fs fields) decodeFunc {
	return func(d *decoder, n *yaml.Node, p string) {
		d.mapping(n, p, fs.keys(), func(key string, _, v *yaml.Node) {
			i := slices.IndexFunc(fs, func(f field) bool { return f.key == key })
			fs[i].decode(d, v, join(p, key))
		})
	}
}

type decoder struct {
	file  string
	errs  []error
	nodes int
}

func (d *decoder) errorf(n *yaml.Node, key, format string, args ...any) {
	if len(d.errs) > maxErrors {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	if len(d.errs) == maxErrors {
		d.errs = append(d.errs, &Error{File: d.file, Line: line, Msg: "too many problems; fix these first"})
		return
	}
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// resolve follows aliases and counts the node against the visit budget.
// It returns nil once the budget is spent (after reporting it once).
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.nodes++
	if d.nodes == maxNodes {
		d.errorf(n, "", "too many YAML nodes (aliases expanding to a huge tree?)")
	}
	if d.nodes >= maxNodes {
		return nil
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "not a value"
}

// mapping calls fn for each key of the mapping n in document order,
// reporting a non-mapping, duplicate keys, and (when known is not nil)
// unknown keys with a suggestion. A null n is an empty mapping.
func (d *decoder) mapping(n *yaml.Node, p string, known []string, fn func(key string, k, v *yaml.Node)) {
	n = d.resolve(n)
	if isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		what := "keys"
		if known != nil {
			what = strings.Join(known, ", ")
		}
		d.errorf(n, p, "is %s, want a mapping of %s", kindName(n), what)
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := d.resolve(n.Content[i]), n.Content[i+1]
		if k == nil {
			return
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, p, "a key must be a plain name, not %s", kindName(k))
			continue
		}
		key := k.Value
		if seen[key] {
			d.errorf(k, join(p, key), "defined twice")
			continue
		}
		seen[key] = true
		if known != nil && !slices.Contains(known, key) {
			d.errorf(k, join(p, key), "%s", didYouMean("unknown key", key, known, "known keys"))
			continue
		}
		fn(key, k, v)
	}
}

// scalar returns the text of a scalar node. ok is false for null (the key
// is left as it was) and for non-scalars (reported).
func (d *decoder) scalar(n *yaml.Node, p string) (string, bool) {
	n = d.resolve(n)
	if isNull(n) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, p, "is %s, want a single value", kindName(n))
		return "", false
	}
	return n.Value, true
}

// list decodes a sequence of single values, each of which must pass the
// checks. ok is false when nothing was decoded (null or an error).
func (d *decoder) list(n *yaml.Node, p string, checks ...check) ([]string, bool) {
	n = d.resolve(n)
	if isNull(n) {
		return nil, false
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, p, "is %s, want a list like [a, b]", kindName(n))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	good := true
	for i, item := range n.Content {
		ip := fmt.Sprintf("%s[%d]", p, i)
		s, ok := d.scalar(item, ip)
		if !ok {
			if isNull(d.resolve(item)) {
				d.errorf(item, ip, "is empty")
			}
			good = false
			continue
		}
		if !d.passes(item, ip, s, checks) {
			good = false
			continue
		}
		out = append(out, s)
	}
	return out, good
}

func (d *decoder) yamlError(err error) error {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: d.file, Line: line, Msg: "not valid YAML: " + m[2]}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return &Error{File: d.file, Msg: "not valid YAML: " + msg}
}
