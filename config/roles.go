package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Roles an agent's session plays. A preset sends each role only the
// tools it needs: every tool's schema goes with every model call, so a
// tool a role never uses costs on every call of every turn (claude
// 2.1.197 sends 24 schemas, 15,000 tokens a call, unless told otherwise).
const (
	RoleDebater     = "debater"     // a debate turn: read the record, append one turn
	RoleReviewer    = "reviewer"    // a round table's reviewer: read and run a frozen copy, write a verdict file
	RoleImplementer = "implementer" // a round table's implementer: change the workspace, append a turn
	RolePhase       = "phase"       // a round table's research or plan phase: read, write one file
	RoleDistiller   = "distiller"   // the briefing's distiller: read a chat, write a briefing
	// Two more have a boundary of their own but no tools to choose.
	RoleGrader = "grader" // the round table's hidden test command
	RoleProbe  = "probe"  // walkie doctor running a CLI (--version)
)

// Roles lists the roles in the order docs list them.
var Roles = []string{RoleDebater, RoleReviewer, RoleImplementer, RolePhase, RoleDistiller}

// AllTools, as a role's value under tools:, sends the CLI's whole tool set.
const AllTools = "all"

// presetTools are the tools each preset's CLI can be limited to, by the
// names its CLI takes (measured with claude 2.1.197, codex 0.171.0 and
// gemini 0.61.0: docs/agents.md), and what each role gets by default.
// codex has no list of tools: its shell and apply_patch always come, and
// its names are the optional ones to keep; each left out is switched off.
var presetTools = map[string]struct {
	known []string
	roles map[string][]string
}{
	"claude": {
		known: []string{"Agent", "Bash", "CronCreate", "CronDelete", "CronList", "Edit", "EnterWorktree", "ExitWorktree", "NotebookEdit", "Read",
			"ReportFindings", "ScheduleWakeup", "SendMessage", "Skill", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate",
			"WebFetch", "WebSearch", "Workflow", "Write"},
		roles: map[string][]string{
			// Reads the record with sed and appends with a quoted heredoc:
			// Read would add a line number to every line it returns.
			RoleDebater:     {"Bash"},
			RoleReviewer:    {"Read", "Bash", "Write"},
			RoleImplementer: {"Read", "Edit", "Write", "Bash"},
			RolePhase:       {"Read", "Bash", "Write"},
			RoleDistiller:   {"Read", "Write"},
		},
	},
	"codex": {
		known: []string{"web_search", "view_image", "goals", "request_user_input", "skills", "agents", "sleep"},
		roles: map[string][]string{
			RoleDebater: {}, RoleReviewer: {}, RolePhase: {}, RoleDistiller: {},
			RoleImplementer: {"view_image"},
		},
	},
	"gemini": {
		known: []string{"read_file", "read_many_files", "list_directory", "glob", "grep_search", "replace", "write_file", "run_shell_command",
			"web_fetch", "google_web_search", "save_memory", "write_todos", "update_topic", "enter_plan_mode", "invoke_agent"},
		roles: map[string][]string{
			// The preset's approval mode runs no shell: its file tools read
			// the record by line range and append with replace.
			RoleDebater:     {"read_file", "replace"},
			RoleReviewer:    {"read_file", "list_directory", "glob", "grep_search", "write_file"},
			RoleImplementer: {"read_file", "list_directory", "glob", "grep_search", "replace", "write_file"},
			RolePhase:       {"read_file", "list_directory", "glob", "grep_search", "write_file"},
			RoleDistiller:   {"read_file", "write_file"},
		},
	},
}

// codexToolFlags switch each optional codex tool off when a role does not
// keep it.
var codexToolFlags = map[string][]string{
	"web_search":         {"-c", "web_search=disabled"},
	"view_image":         {"-c", "features.view_image=false"},
	"goals":              {"-c", "features.goals=false"},
	"request_user_input": {"-c", "tools.experimental_request_user_input.enabled=false"},
	"skills":             {"-c", "skills.include_instructions=false"},
	// Sub-agents: with gpt-6.2-sol, seven tools and a page of
	// instructions (about 2,200 tokens a call); one session never needs
	// to start others.
	"agents": {"-c", "agents.enabled=false"},
	"sleep":  {"-c", "features.sleep_tool=false"},
}

// defaultRoleTools is a fresh copy of the preset's tools per role; nil
// for a name that is not a preset.
func defaultRoleTools(presetName string) map[string][]string {
	pt, ok := presetTools[presetName]
	if !ok {
		return nil
	}
	out := map[string][]string{}
	for r, ts := range pt.roles {
		out[r] = slices.Clone(ts)
	}
	return out
}

// RoleTools is the tools a's preset sends in role: the names, true; or
// false when the CLI sends its own whole set (a role set to all, an
// agent with a command of its own, or not a preset).
func (a Agent) RoleTools(role string) ([]string, bool) {
	ts, ok := a.Tools[role]
	if !ok || ts == nil {
		return nil, false
	}
	return ts, true
}

// ForRole is a with its preset's command and files limited to the tools
// of role: claude's --tools, codex's -c switches, gemini's tools.core in
// its settings.json; for codex, the role's instructions too
// (RoleInstructions). An agent without role tools (a command of its own,
// a role set to all) is returned as it is.
func (a Agent) ForRole(role string) Agent {
	ts, ok := a.RoleTools(role)
	if !ok {
		return a
	}
	a = a.clone()
	var flags []string
	switch a.Preset {
	case "claude":
		flags = []string{"--tools", strings.Join(ts, ",")}
	case "codex":
		for _, name := range presetTools["codex"].known {
			if !slices.Contains(ts, name) {
				flags = append(flags, codexToolFlags[name]...)
			}
		}
		a.Instructions = RoleInstructions(role)
	case "gemini":
		if a.HomeFiles == nil {
			a.HomeFiles = map[string]string{}
		}
		a.HomeFiles[geminiSettings] = geminiSettingsWith(a.HomeFiles[geminiSettings], ts)
	}
	// Before a trailing prompt (codex exec's positional), as presetFlags.
	at := len(a.Command)
	if at > 0 && a.Command[at-1] == "{prompt}" {
		at--
	}
	a.Command = slices.Insert(a.Command, at, flags...)
	return a
}

// geminiSettings is the file in a private HOME that gemini reads.
const geminiSettings = ".gemini/settings.json"

// geminiSettingsWith is gemini's settings with tools.core set to tools,
// which limits the built-in tools it offers the model. Settings that do
// not read as a JSON object are kept as they are: the user's own file,
// whose problem gemini reports.
func geminiSettingsWith(settings string, tools []string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(settings), &m); err != nil || m == nil {
		if strings.TrimSpace(settings) != "" {
			return settings
		}
		m = map[string]any{}
	}
	t, _ := m["tools"].(map[string]any)
	if t == nil {
		t = map[string]any{}
	}
	t["core"] = tools
	m["tools"] = t
	b, err := json.Marshal(m)
	if err != nil {
		return settings
	}
	return string(b) + "\n"
}

// roleTools decodes tools: of a preset agent, a mapping of role to a list
// of its CLI's tool names or all, over the preset's own.
func roleTools(a *Agent) decodeFunc {
	return func(d *decoder, n *yaml.Node, p string) {
		pt, ok := presetTools[a.Preset]
		if !ok {
			d.errorf(n, p, "applies to the presets (%s); an agent with no preset is its own command, which passes its CLI's flags itself", strings.Join(PresetNames, ", "))
			return
		}
		d.mapping(n, p, Roles, func(role string, _, v *yaml.Node) {
			rp := join(p, role)
			if s, ok := scalarValue(d.resolve(v)); ok {
				if s != AllTools {
					d.errorf(v, rp, "is %q: give a list of %s's tools, like [%s], or %s for its whole set", s, a.Preset, strings.Join(pt.roles[role], ", "), AllTools)
					return
				}
				a.Tools[role] = nil
				return
			}
			ts, ok := d.list(v, rp, knownTool(a.Preset, pt.known))
			if !ok {
				return
			}
			if len(ts) == 0 && a.Preset != "codex" {
				d.errorf(v, rp, "is empty: %s would have no tool to write with; give the tools the role needs, or %s", a.Preset, AllTools)
				return
			}
			a.Tools[role] = ts
		})
	}
}

// scalarValue is the text of a scalar node that is not null.
func scalarValue(n *yaml.Node) (string, bool) {
	if n == nil || n.Kind != yaml.ScalarNode || isNull(n) {
		return "", false
	}
	return n.Value, true
}

// knownTool checks a tool name against the ones its CLI has.
func knownTool(presetName string, known []string) check {
	return func(d *decoder, n *yaml.Node, p, s string) bool {
		if slices.Contains(known, s) {
			return true
		}
		d.errorf(n, p, "%s", didYouMean(fmt.Sprintf("%q is not a tool of %s", s, presetName), s, known, "its tools"))
		return false
	}
}

// cloneTools copies a role-tools map, lists included.
func cloneTools(m map[string][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = slices.Clone(v)
	}
	return out
}
