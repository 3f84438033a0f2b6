package config

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/walkie-sh/walkie/walkie"
)

// The tables below are the file's whole vocabulary: one per section, each
// line a key, the decoder that reads its value (values.go) and the field it
// lands in. Adding a key is one line in its table (plus the field it fills,
// and a line in docs/configuration.md, which TestDocsNameEveryKey checks).
// A key of both defaults: and agents goes into sharedFields, with a case in
// TestSharedKeys; a new section is a table function, a line in its parent's
// table (for a top-level one, in topLevel and topKeys) and a line in
// sectionKeys (example_test.go) so the docs test sees it.

// topKeys are the file's sections in the order docs/configuration.md lists
// them, which messages follow.
var topKeys = []string{"defaults", "agents", "sandbox", "prompts", "roundtable_prompts", "pricing", "limits", "notify", "serve", "budget_usd", "people"}

// topLevel holds the same keys in the order they are decoded, whatever the
// file's order: agents start from the defaults and name prompts, and
// limits name agents.
func topLevel(c *Config) fields {
	return fields{
		{"defaults", section(defaultsFields(&c.Defaults))},
		{"prompts", prompts(c.Prompts)},
		{"roundtable_prompts", section(roundtablePromptFields(&c.Roundtable))},
		{"agents", agents(c)},
		{"sandbox", section(sandboxRoleFields(c.Sandbox))},
		{"pricing", section(pricingFields(&c.Pricing))},
		{"limits", section(limitsFields(c))},
		{"notify", section(notifyFields(&c.Notify))},
		{"serve", section(serveFields(&c.Serve))},
		{"budget_usd", money(&c.BudgetUSD)},
		{"people", people(c)},
	}
}

// roundtablePromptFields are the round table's templates, one per role,
// each checked with that role's data.
func roundtablePromptFields(p *RoundtablePrompts) fields {
	return fields{
		{"implementer", roundtablePrompt("implementer", &p.Implementer)},
		{"reviewer", roundtablePrompt("reviewer", &p.Reviewer)},
		{"research", roundtablePrompt("research", &p.Research)},
		{"plan", roundtablePrompt("plan", &p.Plan)},
	}
}

// serveFields are walkie serve's own settings.
func serveFields(s *Serve) fields { return fields{{"allowed_hosts", hostList(&s.AllowedHosts)}} }

// sharedFields are the keys both defaults: and an agent take, declared
// once for both: an agent's own value replaces the default, except
// env_allow, sandbox_read and sandbox_write, which add to it. own says
// the keys are an agent's.
func sharedFields(t *Timing, envAllow *[]string, home *string, b *Boundary, own bool) fields {
	return fields{
		{"timeout", positiveDuration(&t.Timeout)},
		{"stall", duration(&t.Stall)},
		{"grace", duration(&t.Grace)},
		{"kill_grace", duration(&t.KillGrace)},
		{"retries", count(&t.Retries)},
		{"debounce", duration(&t.Debounce)},
		{"transcript_cap", size(&t.TranscriptCap)},
		{"env_allow", envPatterns(envAllow)},
		{"home", oneOf(homeModes, home)},
		{"sandbox", sandboxLevel(&b.Sandbox, own)},
		{"sandbox_read", sandboxPaths(&b.SandboxRead)},
		{"sandbox_write", sandboxPaths(&b.SandboxWrite)},
		{"key_proxy", oneOf(KeyProxyModes, &b.KeyProxy)},
	}
}

func defaultsFields(def *AgentDefaults) fields {
	return sharedFields(&def.Timing, &def.EnvAllow, &def.Home, &def.Boundary, false)
}

var (
	homeModes      = []string{HomePrivate, HomeInherit}
	tmpDirModes    = []string{TmpDirPrivate, TmpDirInherit}
	workspaceModes = []string{WorkspaceLive, WorkspaceWorktree}
	usageKinds     = []string{UsageClaudeJSON, UsageCodexJSONL, UsageGeminiJSON, UsageNone}
)

// agentFields are the keys of one entry under agents:.
func agentFields(a *Agent, prompts Prompts) fields {
	return append(fields{
		{"preset", readFirst},
		{"mode", readFirst},
		{"command", argv(&a.Command)},
		{"env", strMap(&a.Env, isEnvName, hasKnownPlaceholders)},
		{"dir", workDir(&a.Dir)},
		{"home_files", strMap(&a.HomeFiles, isHomePath, nil)},
		{"tmpdir", oneOf(tmpDirModes, &a.TmpDir)},
		{"workspace", oneOf(workspaceModes, &a.Workspace)},
		{"rules", screenRules(&a.Rules)},
		{"usage", oneOf(usageKinds, &a.Usage)},
		{"model", str(&a.Model)},
		{"effort", str(&a.Effort)},
		{"prompt", promptName(prompts, &a.Prompt)},
		{"tools", roleTools(a)},
	}, sharedFields(&a.Timing, &a.EnvAllow, &a.Home, &a.Boundary, true)...)
}

// readFirst is the decoder of the keys presetAndMode has read already.
func readFirst(*decoder, *yaml.Node, string) {}

// ruleFields are the keys of one screen rule; *match is set to the
// match: value's node, for the line of a message about it.
func ruleFields(r *Rule, match **yaml.Node) fields {
	return fields{
		{"match", pattern(&r.Match, match)},
		{"reply", str(&r.Reply)},
		{"outcome", oneOf(walkie.RuleOutcomes, &r.Outcome)},
		{"detail", str(&r.Detail)},
	}
}

func pricingFields(pr *Pricing) fields {
	return fields{
		{"as_of", date(&pr.AsOf)},
		{"models", prices(pr.Models)},
	}
}

// priceFields are the keys of one model's price; *in and *out say
// whether each was given.
func priceFields(pr *Price, in, out *bool) fields {
	return fields{
		{"input", given(in, money(&pr.Input))},
		{"output", given(out, money(&pr.Output))},
	}
}

func (c *Config) hasAgent(name string) bool {
	_, ok := c.Agents[name]
	return ok
}

// people sets c.People: a mapping of names to {telegram: CHAT_ID} (or
// nothing), or a plain list of names. A person may not share a name with
// an agent: one name is one party.
func people(c *Config) decodeFunc {
	add := func(d *decoder, k *yaml.Node, p, name string) bool {
		kp := join(p, name)
		switch {
		case !walkie.ValidName(name):
			d.errorf(k, kp, "%q is not a valid name for a person (letters, digits, '.', '_' or '-'; not \"supervisor\")", name)
			return false
		case c.hasAgent(name):
			d.errorf(k, kp, "%s is an agent (agents: or a preset) and cannot also be a person: one name is one party", name)
			return false
		}
		if c.People == nil {
			c.People = map[string]Person{}
		}
		if _, dup := c.People[name]; dup {
			d.errorf(k, kp, "listed twice")
			return false
		}
		c.People[name] = Person{}
		return true
	}
	return func(d *decoder, n *yaml.Node, p string) {
		if r := d.resolve(n); r != nil && r.Kind == yaml.SequenceNode {
			names, _ := d.list(r, p)
			for i, name := range names {
				add(d, r.Content[i], p, name)
			}
			return
		}
		d.mapping(n, p, nil, func(name string, k, v *yaml.Node) {
			if !add(d, k, p, name) {
				return
			}
			var person Person
			section(personFields(&person))(d, v, join(p, name))
			c.People[name] = person
		})
	}
}

// personFields are one person's keys under people:.
func personFields(p *Person) fields {
	return fields{{"telegram", checked(&p.Telegram, isChatID)}}
}

// limitsFields name c's agents, so they are decoded after them.
func limitsFields(c *Config) fields {
	return fields{
		{"max_sessions", count(&c.Limits.MaxSessions)},
		{"per_agent_sessions", perAgent(c, &c.Limits.PerAgentSessions, count)},
		{"per_agent_turns_per_hour", perAgent(c, &c.Limits.PerAgentTurnsPerHour, count)},
		{"per_agent_daily_usd", perAgent(c, &c.Limits.PerAgentDailyUSD, money)},
	}
}

func notifyFields(nt *Notify) fields {
	return fields{
		{"command", notifyArgv(&nt.Command)},
		{"webhook", section(webhookFields(&nt.Webhook))},
		{"telegram", section(telegramFields(&nt.Telegram))},
		{"copy_supervisor", boolean(&nt.CopySupervisor)},
	}
}

func webhookFields(w *Webhook) fields {
	return fields{
		{"url", httpURL(&w.URL)},
		{"headers", strMap(&w.Headers, nil, nil)},
	}
}

func telegramFields(t *Telegram) fields {
	return fields{
		{"chat_id", str(&t.ChatID)},
		{"token_env", checked(&t.TokenEnv, isEnvName)},
		{"api_url", baseURL(&t.APIURL)},
	}
}

// The sections below are mappings of names the user chooses (agents,
// prompts, models), so they have no table of keys; each entry's value has.

var agentNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// prompts adds the templates of prompts: to ps, each checked by running it.
func prompts(ps Prompts) decodeFunc {
	return func(d *decoder, n *yaml.Node, p string) {
		d.mapping(n, p, nil, func(name string, k, v *yaml.Node) {
			np := join(p, name)
			if !agentNameRE.MatchString(name) {
				d.errorf(k, np, "%q is not a valid template name (letters, digits, - and _)", name)
				return
			}
			src, ok := d.scalar(v, np)
			if !ok {
				if isNull(d.resolve(v)) {
					d.errorf(v, np, "is empty")
				}
				return
			}
			if err := checkPrompt(name, src); err != nil {
				d.errorf(v, np, "bad template: %v", err)
				return
			}
			ps[name] = src
		})
	}
}

// agents sets c.Agents: the presets, then the entries of agents:, which
// may replace them.
func agents(c *Config) decodeFunc {
	return func(d *decoder, n *yaml.Node, p string) {
		c.Agents = map[string]Agent{}
		for _, name := range PresetNames {
			c.Agents[name] = base(name, name, "", c.Defaults)
		}
		d.mapping(n, p, nil, func(name string, k, v *yaml.Node) {
			if a, ok := d.agent(name, k, v, join(p, name), c); ok {
				c.Agents[name] = a
			}
		})
	}
}

// agent decodes one entry under agents:. ok is false when it has a problem,
// which is reported.
func (d *decoder) agent(name string, k, v *yaml.Node, p string, c *Config) (a Agent, ok bool) {
	if !agentNameRE.MatchString(name) {
		d.errorf(k, p, "%q is not a valid agent name (letters, digits, - and _, at most 64, starting with a letter or digit)", name)
		return Agent{}, false
	}
	v = d.resolve(v)
	if v == nil {
		return Agent{}, false
	}
	presetName, mode, ok := d.presetAndMode(name, v, p)
	if !ok {
		return Agent{}, false
	}
	a, _ = preset(presetName, mode)
	a = withDefaults(a, name, c.Defaults)
	errs := len(d.errs)
	section(agentFields(&a, c.Prompts))(d, v, p)
	if len(d.errs) > errs {
		return Agent{}, false
	}
	if !d.effortFits(&a, v, p) {
		return Agent{}, false
	}
	if a.Preset != "" && !hasKey(v, "command") {
		a.presetFlags()
	} else if hasKey(v, "command") {
		if hasKey(v, "tools") {
			d.errorf(keyValue(v, "tools"), p+".tools", "cannot go with command: of your own, whose flags choose its CLI's tools; remove one of them")
			return Agent{}, false
		}
		a.Tools = nil
	}
	if len(a.Command) == 0 {
		d.errorf(k, p, "no command: set command: [program, args…] or preset: one of %s", strings.Join(PresetNames, ", "))
		return Agent{}, false
	}
	for _, key := range []string{"model", "effort"} {
		val := map[string]string{"model": a.Model, "effort": a.Effort}[key]
		if val == "" && slices.ContainsFunc(a.Command, func(s string) bool { return strings.Contains(s, "{"+key+"}") }) {
			d.errorf(k, p, "the command passes {%s}, but %s: is empty", key, key)
			return Agent{}, false
		}
	}
	return a, true
}

// effortFits checks a preset agent's effort against what its CLI takes.
func (d *decoder) effortFits(a *Agent, v *yaml.Node, p string) bool {
	if a.Preset == "" || a.Effort == "" || hasKey(v, "command") {
		return true
	}
	at := keyValue(d.resolve(v), "effort")
	if at == nil {
		at = v // the preset's own default: not the file's fault, but say where
	}
	choices, ok := Efforts[a.Preset]
	if !ok {
		d.errorf(at, p+".effort", "the %s CLI has no reasoning-effort setting; remove effort:, or write your own command: with the CLI's flags", a.Preset)
		return false
	}
	if !slices.Contains(choices, a.Effort) {
		msg := fmt.Sprintf("%q is not an effort %s takes: %s", a.Effort, a.Preset, strings.Join(choices, ", "))
		if sug := suggest(a.Effort, choices); sug != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		d.errorf(at, p+".effort", "%s", msg)
		return false
	}
	return true
}

// hasKey reports whether the mapping v sets key to something other than
// null.
func hasKey(v *yaml.Node, key string) bool {
	n := keyValue(v, key)
	return n != nil && !isNull(n)
}

// keyValue is the value node of key in the mapping v, nil if absent.
func keyValue(v *yaml.Node, key string) *yaml.Node {
	if v == nil || v.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i].Value == key {
			return v.Content[i+1]
		}
	}
	return nil
}

// presetAndMode reads an entry's preset: and mode: before its other keys,
// wherever they sit in it: they decide the agent the other keys change.
// ok is false when either has a problem, which is reported.
func (d *decoder) presetAndMode(name string, v *yaml.Node, p string) (presetName, mode string, ok bool) {
	if IsPreset(name) {
		presetName = name
	}
	if v.Kind != yaml.MappingNode {
		return presetName, "", true
	}
	var modeNode, commandNode *yaml.Node
	for i := 0; i+1 < len(v.Content); i += 2 {
		switch v.Content[i].Value {
		case "preset":
			pn := v.Content[i+1]
			s, ok := d.scalar(pn, p+".preset")
			if !ok {
				continue
			}
			if s != "" && !IsPreset(s) {
				d.errorf(pn, p+".preset", "%s", didYouMean(fmt.Sprintf("unknown preset %q", s), s, PresetNames, "presets"))
				return "", "", false
			}
			presetName = s
		case "mode":
			modeNode = v.Content[i+1]
		case "command":
			commandNode = v.Content[i+1]
		}
	}
	if modeNode == nil {
		return presetName, "", true
	}
	errs := len(d.errs)
	oneOf(Modes, &mode)(d, modeNode, p+".mode")
	switch {
	case len(d.errs) > errs:
		return "", "", false
	case presetName == "":
		d.errorf(modeNode, p+".mode", "needs a preset (%s): it picks that CLI's permission flags", strings.Join(PresetNames, ", "))
		return "", "", false
	case commandNode != nil && !isNull(commandNode):
		d.errorf(modeNode, p+".mode", "has no effect on your own command:; write the CLI's flags into it (docs/agents.md), or drop command: to use the preset's")
		return "", "", false
	}
	return presetName, mode, true
}

// base returns an agent with the defaults applied and, if presetName is
// set, the preset's fields in the given mode, its command carrying the
// preset's own model and effort.
func base(name, presetName, mode string, def AgentDefaults) Agent {
	a, _ := preset(presetName, mode)
	a = withDefaults(a, name, def)
	a.presetFlags()
	return a
}

// withDefaults names a and applies the defaults under its own keys.
func withDefaults(a Agent, name string, def AgentDefaults) Agent {
	a.Name = name
	a.Timing = def.Timing
	a.Boundary = def.Boundary
	a.SandboxRead = slices.Clone(def.SandboxRead)
	a.SandboxWrite = slices.Clone(def.SandboxWrite)
	a.EnvAllow = union(def.EnvAllow, a.EnvAllow)
	a.Home = def.Home
	a.Dir = DefaultDir
	a.Prompt = DefaultPrompt
	a.Usage = cmp.Or(a.Usage, UsageNone)
	a.TmpDir = cmp.Or(a.TmpDir, TmpDirInherit)
	return a
}

// screenRules puts the rules of a rules: list before *dst's (a preset's),
// so they can pre-empt them.
func screenRules(dst *[]Rule) decodeFunc {
	return func(d *decoder, n *yaml.Node, p string) {
		n = d.resolve(n)
		if isNull(n) {
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, p, "is %s, want a list of {match, reply} or {match, outcome, detail}", kindName(n))
			return
		}
		var rules []Rule
		for i, item := range n.Content {
			if r, ok := d.rule(item, fmt.Sprintf("%s[%d]", p, i)); ok {
				rules = append(rules, r)
			}
		}
		*dst = append(rules, *dst...)
	}
}

// rule decodes one screen rule. ok is false when it is incomplete, which
// is reported.
func (d *decoder) rule(item *yaml.Node, p string) (Rule, bool) {
	var r Rule
	var match *yaml.Node
	section(ruleFields(&r, &match))(d, item, p)
	n := d.resolve(item)
	if n == nil || n.Kind != yaml.MappingNode {
		return Rule{}, false
	}
	switch {
	case r.Match == "" && match == nil:
		d.errorf(n, p, "needs match: (a regexp)")
	case r.Match == "":
		d.errorf(match, p+".match", "is empty; an empty regexp matches everything")
	case (r.Reply == "") == (r.Outcome == ""):
		d.errorf(n, p, "needs exactly one of reply: (text typed into the terminal) or outcome: (%s)", outcomeList(walkie.RuleOutcomes))
	default:
		if r.Outcome != "" {
			r.Detail = cmp.Or(r.Detail, fmt.Sprintf("the output matched %q", r.Match))
		}
		return r, true
	}
	return Rule{}, false
}

// pattern stores a regexp, noting its node in *at. A regexp that does not
// compile is reported and stored all the same, so the rule's other checks
// speak of what was written, not of an empty match:.
func pattern(dst *string, at **yaml.Node) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		*at = v
		if s, ok := d.scalar(v, p); ok {
			if _, err := regexp.Compile(s); err != nil {
				d.errorf(v, p, "not a valid regexp: %v", err)
			}
			*dst = s
		}
	}
}

// prices merges the models: table into dst; a model needs both prices.
func prices(dst map[string]Price) decodeFunc {
	return func(d *decoder, n *yaml.Node, p string) {
		d.mapping(n, p, nil, func(model string, _, v *yaml.Node) {
			mp := join(p, model)
			var price Price
			var in, out bool
			section(priceFields(&price, &in, &out))(d, v, mp)
			if mv := d.resolve(v); mv != nil && mv.Kind == yaml.MappingNode && (!in || !out) {
				d.errorf(mv, mp, "needs both input: and output: (USD per million tokens)")
				return
			}
			if in && out {
				dst[model] = price
			}
		})
	}
}

// given notes in *ok whether the key was given a single value (refused or
// not) before dec reads it.
func given(ok *bool, dec decodeFunc) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		n := d.resolve(v)
		*ok = n != nil && n.Kind == yaml.ScalarNode && !isNull(n)
		dec(d, v, p)
	}
}

// perAgent merges a mapping of agent names to values into *dst, each
// decoded by value (count, money); a value value refuses stays out.
func perAgent[T int | float64](c *Config, dst *map[string]T, value func(*T) decodeFunc) decodeFunc {
	return func(d *decoder, n *yaml.Node, p string) {
		d.mapping(n, p, nil, func(name string, k, v *yaml.Node) {
			kp := join(p, name)
			if _, ok := c.Agents[name]; !ok {
				d.errorf(k, kp, "%s", didYouMean(fmt.Sprintf("no agent %q", name), name, c.AgentNames(), "agents"))
				return
			}
			x := T(-1)
			value(&x)(d, v, kp)
			if x < 0 {
				return
			}
			if *dst == nil {
				*dst = map[string]T{}
			}
			(*dst)[name] = x
		})
	}
}

func outcomeList(o []walkie.Outcome) string {
	names := make([]string, len(o))
	for i, x := range o {
		names[i] = string(x)
	}
	return strings.Join(names, ", ")
}
