package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

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
	if e.File == "" {
		b.WriteString("(built-in)")
	} else {
		b.WriteString(e.File)
	}
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

var (
	topKeys      = []string{"defaults", "agents", "prompts", "pricing", "limits", "notify", "budget_usd"}
	defaultsKeys = []string{"timeout", "stall", "grace", "kill_grace", "retries", "debounce", "env_allow", "home", "transcript_cap"}
	agentKeys    = []string{"preset", "mode", "command", "env", "env_allow", "dir", "home", "home_files", "tmpdir",
		"timeout", "stall", "grace", "kill_grace", "retries", "debounce", "rules", "usage", "model", "prompt", "transcript_cap"}
	ruleKeys     = []string{"match", "reply", "outcome", "detail"}
	pricingKeys  = []string{"as_of", "models"}
	priceKeys    = []string{"input", "output"}
	limitsKeys   = []string{"max_sessions", "per_agent_sessions", "per_agent_turns_per_hour"}
	notifyKeys   = []string{"command", "webhook", "telegram", "copy_supervisor"}
	webhookKeys  = []string{"url", "headers"}
	telegramKeys = []string{"chat_id", "token_env", "api_url"}
	usageKinds   = []string{UsageClaudeJSON, UsageCodexJSONL, UsageGeminiJSON, UsageNone}
	homeModes    = []string{HomePrivate, HomeInherit}
	tmpDirModes  = []string{TmpDirPrivate, TmpDirInherit}

	agentNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	envNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envGlobRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\*?$`)
	yamlLineRE  = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	sizeRE      = regexp.MustCompile(`^([0-9]+)(KiB|MiB|GiB)?$`)
)

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
			if s := suggest(key, known); s != "" {
				d.errorf(k, join(p, key), "unknown key (did you mean %q?)", s)
			} else {
				d.errorf(k, join(p, key), "unknown key; known keys: %s", strings.Join(known, ", "))
			}
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

func (d *decoder) str(n *yaml.Node, p string, dst *string) {
	if s, ok := d.scalar(n, p); ok {
		*dst = s
	}
}

func (d *decoder) oneOf(n *yaml.Node, p string, choices []string, dst *string) {
	s, ok := d.scalar(n, p)
	if !ok {
		return
	}
	if !slices.Contains(choices, s) {
		msg := fmt.Sprintf("%q is not one of %s", s, strings.Join(choices, ", "))
		if sug := suggest(s, choices); sug != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		d.errorf(n, p, "%s", msg)
		return
	}
	*dst = s
}

func (d *decoder) duration(n *yaml.Node, p string, positive bool, dst *time.Duration) {
	s, ok := d.scalar(n, p)
	if !ok {
		return
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		d.errorf(n, p, "%q is not a duration (write e.g. 15m)", s)
		return
	}
	switch {
	case v < 0:
		d.errorf(n, p, "%q must not be negative", s)
	case positive && v == 0:
		d.errorf(n, p, "%q must be more than 0", s)
	default:
		*dst = v
	}
}

func (d *decoder) count(n *yaml.Node, p string, dst *int) {
	s, ok := d.scalar(n, p)
	if !ok {
		return
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		d.errorf(n, p, "%q is not a whole number", s)
		return
	}
	if v < 0 {
		d.errorf(n, p, "%q must not be negative", s)
		return
	}
	*dst = v
}

// size decodes a byte count: a whole number, or one followed by KiB, MiB
// or GiB.
func (d *decoder) size(n *yaml.Node, p string, dst *int64) {
	s, ok := d.scalar(n, p)
	if !ok {
		return
	}
	m := sizeRE.FindStringSubmatch(s)
	if m != nil {
		v, err := strconv.ParseInt(m[1], 10, 64)
		shift := map[string]uint{"KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
		if err == nil && v <= math.MaxInt64>>shift {
			*dst = v << shift
			return
		}
	}
	d.errorf(n, p, "%q is not a size (write e.g. 8MiB, 512KiB or 1048576)", s)
}

func (d *decoder) money(n *yaml.Node, p string, dst *float64) {
	s, ok := d.scalar(n, p)
	if !ok {
		return
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.errorf(n, p, "%q is not a number", s)
		return
	}
	if v < 0 {
		d.errorf(n, p, "%q must not be negative", s)
		return
	}
	*dst = v
}

func (d *decoder) boolean(n *yaml.Node, p string, dst *bool) {
	s, ok := d.scalar(n, p)
	if !ok {
		return
	}
	switch strings.ToLower(s) {
	case "true", "yes", "on":
		*dst = true
	case "false", "no", "off":
		*dst = false
	default:
		d.errorf(n, p, "%q is not true or false", s)
	}
}

// list decodes a sequence of single values; check, if set, validates each.
// ok is false when nothing was decoded (null or an error).
func (d *decoder) list(n *yaml.Node, p string, check func(item *yaml.Node, p, s string) bool) ([]string, bool) {
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
		if check != nil && !check(item, ip, s) {
			good = false
			continue
		}
		out = append(out, s)
	}
	return out, good
}

// strMap decodes a mapping of single values into dst (merging key by key).
func (d *decoder) strMap(n *yaml.Node, p string, checkKey func(k *yaml.Node, p, key string) bool,
	checkVal func(v *yaml.Node, p, s string) bool, dst *map[string]string) {
	d.mapping(n, p, nil, func(key string, k, v *yaml.Node) {
		kp := join(p, key)
		if checkKey != nil && !checkKey(k, kp, key) {
			return
		}
		if isNull(d.resolve(v)) {
			d.errorf(v, kp, "is empty (write \"\" for an empty value)")
			return
		}
		s, ok := d.scalar(v, kp)
		if !ok || (checkVal != nil && !checkVal(v, kp, s)) {
			return
		}
		if *dst == nil {
			*dst = map[string]string{}
		}
		(*dst)[key] = s
	})
}

func (d *decoder) placeholders(n *yaml.Node, p, s string) bool {
	if err := checkPlaceholders(s); err != nil {
		d.errorf(n, p, "%v", err)
		return false
	}
	return true
}

func (d *decoder) envName(n *yaml.Node, p, s string) bool {
	if !envNameRE.MatchString(s) {
		d.errorf(n, p, "%q is not an environment variable name", s)
		return false
	}
	return true
}

func (d *decoder) envGlob(n *yaml.Node, p, s string) bool {
	if !envGlobRE.MatchString(s) {
		d.errorf(n, p, "%q is not an environment variable name or prefix* pattern", s)
		return false
	}
	return true
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

// Parse parses and validates a config file's contents; path is used in
// messages and kept as Config.Path. Empty data gives the built-in defaults.
func Parse(path string, data []byte) (*Config, error) {
	d := &decoder{file: path}
	c := &Config{
		Path:     path,
		Defaults: builtinDefaults(),
		Prompts:  defaultPrompts(),
		Pricing:  defaultPricing(),
		Notify:   Notify{Telegram: Telegram{TokenEnv: DefaultTokenEnv, APIURL: DefaultTelegram}},
	}
	c.Defaults.EnvAllow = slices.Clone(DefaultEnvAllow)
	c.Defaults.Home = HomePrivate

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

	sections := map[string]*yaml.Node{}
	d.mapping(root, "", topKeys, func(key string, _, v *yaml.Node) { sections[key] = v })

	// Order matters: agents use the defaults and prompt names, limits name agents.
	d.defaults(sections["defaults"], &c.Defaults)
	d.prompts(sections["prompts"], c.Prompts)
	c.Agents = d.agents(sections["agents"], c)
	d.pricing(sections["pricing"], &c.Pricing)
	d.limits(sections["limits"], c)
	d.notify(sections["notify"], &c.Notify)
	if n, ok := sections["budget_usd"]; ok {
		d.money(n, "budget_usd", &c.BudgetUSD)
	}

	if len(d.errs) > 0 {
		return nil, errors.Join(d.errs...)
	}
	return c, nil
}

func (d *decoder) defaults(n *yaml.Node, def *AgentDefaults) {
	d.mapping(n, "defaults", defaultsKeys, func(key string, _, v *yaml.Node) {
		p := "defaults." + key
		switch key {
		case "timeout":
			d.duration(v, p, true, &def.Timeout)
		case "stall":
			d.duration(v, p, false, &def.Stall)
		case "grace":
			d.duration(v, p, false, &def.Grace)
		case "kill_grace":
			d.duration(v, p, false, &def.KillGrace)
		case "debounce":
			d.duration(v, p, false, &def.Debounce)
		case "retries":
			d.count(v, p, &def.Retries)
		case "env_allow":
			if l, ok := d.list(v, p, d.envGlob); ok {
				def.EnvAllow = union(def.EnvAllow, l)
			}
		case "home":
			d.oneOf(v, p, homeModes, &def.Home)
		case "transcript_cap":
			d.size(v, p, &def.TranscriptCap)
		}
	})
}

func (d *decoder) prompts(n *yaml.Node, ps Prompts) {
	d.mapping(n, "prompts", nil, func(name string, k, v *yaml.Node) {
		p := join("prompts", name)
		if !agentNameRE.MatchString(name) {
			d.errorf(k, p, "%q is not a valid template name (letters, digits, - and _)", name)
			return
		}
		src, ok := d.scalar(v, p)
		if !ok {
			if isNull(d.resolve(v)) {
				d.errorf(v, p, "is empty")
			}
			return
		}
		if err := checkPrompt(name, src); err != nil {
			d.errorf(v, p, "bad template: %v", err)
			return
		}
		ps[name] = src
	})
}

// base returns an agent with the defaults applied and, if presetName is
// set, the preset's fields in the given mode.
func base(name, presetName, mode string, def AgentDefaults) Agent {
	a, _ := preset(presetName, mode)
	a.Name = name
	a.Timeout, a.Stall, a.Grace, a.KillGrace = def.Timeout, def.Stall, def.Grace, def.KillGrace
	a.Retries, a.Debounce, a.TranscriptCap = def.Retries, def.Debounce, def.TranscriptCap
	a.EnvAllow = union(def.EnvAllow, a.EnvAllow)
	a.Home = def.Home
	a.Dir = DefaultDir
	a.Prompt = DefaultPrompt
	if a.Usage == "" {
		a.Usage = UsageNone
	}
	if a.TmpDir == "" {
		a.TmpDir = TmpDirInherit
	}
	return a
}

func (d *decoder) agents(n *yaml.Node, c *Config) map[string]Agent {
	agents := map[string]Agent{}
	for _, name := range PresetNames {
		agents[name] = base(name, name, "", c.Defaults)
	}
	d.mapping(n, "agents", nil, func(name string, k, v *yaml.Node) {
		p := join("agents", name)
		if !agentNameRE.MatchString(name) {
			d.errorf(k, p, "%q is not a valid agent name (letters, digits, - and _, at most 64, starting with a letter or digit)", name)
			return
		}
		v = d.resolve(v)
		if v == nil {
			return
		}
		// The preset and its mode decide the base, wherever the keys sit
		// in the entry.
		presetName := ""
		if IsPreset(name) {
			presetName = name
		}
		var modeNode, commandNode *yaml.Node
		mode := ""
		if v.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(v.Content); i += 2 {
				switch v.Content[i].Value {
				case "preset":
					pn := v.Content[i+1]
					s, ok := d.scalar(pn, p+".preset")
					if !ok {
						continue
					}
					if s != "" && !IsPreset(s) {
						msg := fmt.Sprintf("unknown preset %q; presets: %s", s, strings.Join(PresetNames, ", "))
						if sug := suggest(s, PresetNames); sug != "" {
							msg = fmt.Sprintf("unknown preset %q (did you mean %q?)", s, sug)
						}
						d.errorf(pn, p+".preset", "%s", msg)
						return
					}
					presetName = s
				case "mode":
					modeNode = v.Content[i+1]
				case "command":
					commandNode = v.Content[i+1]
				}
			}
		}
		if modeNode != nil {
			errs := len(d.errs)
			d.oneOf(modeNode, p+".mode", Modes, &mode)
			switch {
			case len(d.errs) > errs:
				return
			case presetName == "":
				d.errorf(modeNode, p+".mode", "needs a preset (%s): it picks that CLI's permission flags", strings.Join(PresetNames, ", "))
				return
			case commandNode != nil && !isNull(commandNode):
				d.errorf(modeNode, p+".mode", "has no effect on your own command:; write the CLI's flags into it (docs/agents.md), or drop command: to use the preset's")
				return
			}
		}
		a := base(name, presetName, mode, c.Defaults)
		errs := len(d.errs)
		d.agentFields(v, p, &a, c.Prompts)
		if len(d.errs) > errs {
			return
		}
		if len(a.Command) == 0 {
			d.errorf(k, p, "no command: set command: [program, args…] or preset: one of %s", strings.Join(PresetNames, ", "))
			return
		}
		if a.Model == "" && slices.ContainsFunc(a.Command, func(s string) bool { return strings.Contains(s, "{model}") }) {
			d.errorf(k, p, "the command passes {model}, but model: is empty")
			return
		}
		agents[name] = a
	})
	return agents
}

func (d *decoder) agentFields(n *yaml.Node, ap string, a *Agent, prompts Prompts) {
	var userRules []Rule
	d.mapping(n, ap, agentKeys, func(key string, _, v *yaml.Node) {
		p := ap + "." + key
		switch key {
		case "preset", "mode":
			// Read before the other keys; see agents.
		case "command":
			if vv := d.resolve(v); vv != nil && vv.Kind == yaml.ScalarNode && !isNull(vv) {
				d.errorf(v, p, "is a single string; write the argv as a list, e.g. [mytool, --file, \"{file}\", \"{prompt}\"] (no shell is involved)")
				return
			}
			l, ok := d.list(v, p, d.placeholders)
			if !ok {
				return
			}
			if len(l) == 0 || l[0] == "" {
				d.errorf(v, p, "the program (first element) is missing")
				return
			}
			a.Command = l
		case "env":
			d.strMap(v, p, d.envName, d.placeholders, &a.Env)
		case "env_allow":
			if l, ok := d.list(v, p, d.envGlob); ok {
				a.EnvAllow = union(a.EnvAllow, l)
			}
		case "dir":
			if s, ok := d.scalar(v, p); ok && d.placeholders(v, p, s) {
				if s == "" {
					s = DefaultDir
				}
				a.Dir = s
			}
		case "home":
			d.oneOf(v, p, homeModes, &a.Home)
		case "tmpdir":
			d.oneOf(v, p, tmpDirModes, &a.TmpDir)
		case "home_files":
			d.strMap(v, p, func(k *yaml.Node, p, key string) bool {
				if key == "" || path.IsAbs(key) || strings.HasPrefix(key, "~") ||
					path.Clean(key) != key || key == "." || strings.HasPrefix(key, "../") || key == ".." {
					d.errorf(k, p, "must be a clean path relative to HOME, like .tool/settings.json")
					return false
				}
				return true
			}, nil, &a.HomeFiles)
		case "timeout":
			d.duration(v, p, true, &a.Timeout)
		case "stall":
			d.duration(v, p, false, &a.Stall)
		case "grace":
			d.duration(v, p, false, &a.Grace)
		case "kill_grace":
			d.duration(v, p, false, &a.KillGrace)
		case "debounce":
			d.duration(v, p, false, &a.Debounce)
		case "retries":
			d.count(v, p, &a.Retries)
		case "transcript_cap":
			d.size(v, p, &a.TranscriptCap)
		case "rules":
			userRules = d.rules(v, p)
		case "usage":
			d.oneOf(v, p, usageKinds, &a.Usage)
		case "model":
			d.str(v, p, &a.Model)
		case "prompt":
			s, ok := d.scalar(v, p)
			if !ok {
				return
			}
			if _, known := prompts[s]; !known {
				names := sortedKeys(prompts)
				msg := fmt.Sprintf("no prompt template %q; templates: %s", s, strings.Join(names, ", "))
				if sug := suggest(s, names); sug != "" {
					msg = fmt.Sprintf("no prompt template %q (did you mean %q?)", s, sug)
				}
				d.errorf(v, p, "%s", msg)
				return
			}
			a.Prompt = s
		}
	})
	// The user's rules come first, so they can pre-empt a preset's rule.
	if len(userRules) > 0 {
		a.Rules = append(userRules, a.Rules...)
	}
}

func (d *decoder) rules(n *yaml.Node, p string) []Rule {
	n = d.resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, p, "is %s, want a list of {match, reply} or {match, outcome, detail}", kindName(n))
		return nil
	}
	var out []Rule
	for i, item := range n.Content {
		rp := fmt.Sprintf("%s[%d]", p, i)
		var r Rule
		var matchNode *yaml.Node
		good := true
		d.mapping(item, rp, ruleKeys, func(key string, _, v *yaml.Node) {
			kp := rp + "." + key
			switch key {
			case "match":
				matchNode = v
				if s, ok := d.scalar(v, kp); ok {
					if _, err := regexp.Compile(s); err != nil {
						d.errorf(v, kp, "not a valid regexp: %v", err)
						good = false
					}
					r.Match = s
				}
			case "reply":
				d.str(v, kp, &r.Reply)
			case "outcome":
				d.oneOf(v, kp, RuleOutcomes, &r.Outcome)
			case "detail":
				d.str(v, kp, &r.Detail)
			}
		})
		ri := d.resolve(item)
		if ri == nil || ri.Kind != yaml.MappingNode {
			continue
		}
		switch {
		case r.Match == "" && matchNode == nil:
			d.errorf(ri, rp, "needs match: (a regexp)")
		case r.Match == "":
			d.errorf(matchNode, rp+".match", "is empty; an empty regexp matches everything")
		case (r.Reply == "") == (r.Outcome == ""):
			d.errorf(ri, rp, "needs exactly one of reply: (text typed into the terminal) or outcome: (%s)", strings.Join(RuleOutcomes, ", "))
		default:
			if r.Outcome != "" && r.Detail == "" {
				r.Detail = fmt.Sprintf("the output matched %q", r.Match)
			}
			if good {
				out = append(out, r)
			}
		}
	}
	return out
}

func (d *decoder) pricing(n *yaml.Node, pr *Pricing) {
	d.mapping(n, "pricing", pricingKeys, func(key string, _, v *yaml.Node) {
		p := "pricing." + key
		switch key {
		case "as_of":
			if s, ok := d.scalar(v, p); ok {
				if _, err := time.Parse(time.DateOnly, s); err != nil {
					d.errorf(v, p, "%q is not a date (write e.g. 2026-11-01)", s)
					return
				}
				pr.AsOf = s
			}
		case "models":
			d.mapping(v, p, nil, func(model string, k, mv *yaml.Node) {
				mp := join(p, model)
				var price Price
				var in, out bool
				d.mapping(mv, mp, priceKeys, func(key string, _, v *yaml.Node) {
					switch key {
					case "input":
						_, in = d.scalar(v, mp+".input")
						d.money(v, mp+".input", &price.Input)
					case "output":
						_, out = d.scalar(v, mp+".output")
						d.money(v, mp+".output", &price.Output)
					}
				})
				if mvv := d.resolve(mv); mvv != nil && mvv.Kind == yaml.MappingNode && (!in || !out) {
					d.errorf(mvv, mp, "needs both input: and output: (USD per million tokens)")
					return
				}
				if in && out {
					pr.Models[model] = price
				}
			})
		}
	})
}

func (d *decoder) limits(n *yaml.Node, c *Config) {
	names := c.AgentNames()
	perAgent := func(v *yaml.Node, p string, dst *map[string]int) {
		d.mapping(v, p, nil, func(name string, k, v *yaml.Node) {
			kp := join(p, name)
			if _, ok := c.Agents[name]; !ok {
				msg := fmt.Sprintf("no agent %q; agents: %s", name, strings.Join(names, ", "))
				if s := suggest(name, names); s != "" {
					msg = fmt.Sprintf("no agent %q (did you mean %q?)", name, s)
				}
				d.errorf(k, kp, "%s", msg)
				return
			}
			x := -1
			d.count(v, kp, &x)
			if x < 0 {
				return
			}
			if *dst == nil {
				*dst = map[string]int{}
			}
			(*dst)[name] = x
		})
	}
	d.mapping(n, "limits", limitsKeys, func(key string, _, v *yaml.Node) {
		p := "limits." + key
		switch key {
		case "max_sessions":
			d.count(v, p, &c.Limits.MaxSessions)
		case "per_agent_sessions":
			perAgent(v, p, &c.Limits.PerAgentSessions)
		case "per_agent_turns_per_hour":
			perAgent(v, p, &c.Limits.PerAgentTurnsPerHour)
		}
	})
}

func (d *decoder) notify(n *yaml.Node, nt *Notify) {
	d.mapping(n, "notify", notifyKeys, func(key string, _, v *yaml.Node) {
		p := "notify." + key
		switch key {
		case "command":
			if vv := d.resolve(v); vv != nil && vv.Kind == yaml.ScalarNode && !isNull(vv) {
				d.errorf(v, p, "is a single string; write the argv as a list, e.g. [notify-me, --urgent] (no shell is involved)")
				return
			}
			if l, ok := d.list(v, p, nil); ok && len(l) > 0 {
				nt.Command = l
			}
		case "copy_supervisor":
			d.boolean(v, p, &nt.CopySupervisor)
		case "webhook":
			d.mapping(v, p, webhookKeys, func(key string, _, v *yaml.Node) {
				kp := p + "." + key
				switch key {
				case "url":
					if s, ok := d.scalar(v, kp); ok {
						u, err := url.Parse(s)
						if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
							d.errorf(v, kp, "%q is not an http(s) URL", s)
							return
						}
						nt.Webhook.URL = s
					}
				case "headers":
					d.strMap(v, kp, nil, nil, &nt.Webhook.Headers)
				}
			})
		case "telegram":
			d.mapping(v, p, telegramKeys, func(key string, _, v *yaml.Node) {
				kp := p + "." + key
				switch key {
				case "chat_id":
					d.str(v, kp, &nt.Telegram.ChatID)
				case "token_env":
					if s, ok := d.scalar(v, kp); ok && d.envName(v, kp, s) {
						nt.Telegram.TokenEnv = s
					}
				case "api_url":
					if s, ok := d.scalar(v, kp); ok {
						u, err := url.Parse(s)
						if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
							d.errorf(v, kp, "%q is not an http(s) URL", s)
							return
						}
						nt.Telegram.APIURL = strings.TrimSuffix(s, "/")
					}
				}
			})
		}
	})
}

// union returns a followed by the items of b not already in it.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// suggest returns the candidate closest to s by edit distance, if it is
// close enough to be a likely typo.
func suggest(s string, candidates []string) string {
	best, bestD := "", math.MaxInt
	for _, c := range candidates {
		if dist := levenshtein(strings.ToLower(s), strings.ToLower(c)); dist < bestD {
			best, bestD = c, dist
		}
	}
	limit := max(1, min(3, len(s)/3))
	if bestD <= limit {
		return best
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return math.MaxInt / 2
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
