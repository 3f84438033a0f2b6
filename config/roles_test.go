package config

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestForRole: each preset's command, for each role, sends its CLI only
// that role's tools, with the flags the pinned CLIs take (checked against
// the real CLIs' requests in cmd/fakemodel/modelserver's role tests).
func TestForRole(t *testing.T) {
	c := Default()
	argv := func(name, role string) []string {
		a, err := c.Agent(name)
		if err != nil {
			t.Fatal(err)
		}
		return a.ForRole(role).Command
	}
	for _, tc := range []struct {
		agent, role string
		want        []string // a run of the command
	}{
		{"claude", RoleDebater, []string{"--tools", "Bash"}},
		{"claude", RoleReviewer, []string{"--tools", "Read,Bash,Write"}},
		{"claude", RoleImplementer, []string{"--tools", "Read,Edit,Write,Bash"}},
		{"claude", RolePhase, []string{"--tools", "Read,Bash,Write"}},
		{"claude", RoleDistiller, []string{"--tools", "Read,Write"}},
		{"codex", RoleDebater, []string{"-c", "web_search=disabled", "-c", "features.view_image=false", "-c", "features.goals=false"}},
		{"codex", RoleDebater, []string{"-c", "agents.enabled=false", "-c", "features.sleep_tool=false"}},
		{"codex", RoleImplementer, []string{"-c", "web_search=disabled", "-c", "features.goals=false"}},
	} {
		got := argv(tc.agent, tc.role)
		if !containsRun(got, tc.want) {
			t.Errorf("%s as %s: %q lacks %q", tc.agent, tc.role, got, tc.want)
		}
		if got[len(got)-1] != "{prompt}" && tc.agent == "codex" {
			t.Errorf("codex's prompt is no longer its last argument: %q", got)
		}
	}
	if got := argv("codex", RoleImplementer); slices.Contains(got, "features.view_image=false") {
		t.Errorf("the implementer lost codex's view_image: %q", got)
	}
	g, _ := c.Agent("gemini")
	var settings struct {
		Security map[string]any `json:"security"`
		Tools    struct {
			Core []string `json:"core"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(g.ForRole(RoleDebater).HomeFiles[".gemini/settings.json"]), &settings); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(settings.Tools.Core, []string{"read_file", "replace"}) || settings.Security == nil {
		t.Errorf("gemini's debater settings: %+v", settings)
	}
	// The agent itself is not changed.
	if slices.Contains(argv("claude", ""), "--tools") || strings.Contains(g.HomeFiles[".gemini/settings.json"], "core") {
		t.Error("ForRole changed the agent it was called on, or a role without tools got some")
	}
}

func containsRun(s, run []string) bool {
	for i := 0; i+len(run) <= len(s); i++ {
		if slices.Equal(s[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// TestToolsKey: tools: sets a role's tools per agent, all sends the whole
// set; what does not fit is an error naming file, line and key.
func TestToolsKey(t *testing.T) {
	c, err := Parse("w.yaml", []byte(`
agents:
  claude:
    tools:
      debater: [Read, Edit, Bash]
      reviewer: all
  codex:
    tools:
      debater: [web_search]
`))
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := c.Agent("claude")
	if got := cl.ForRole(RoleDebater).Command; !containsRun(got, []string{"--tools", "Read,Edit,Bash"}) {
		t.Errorf("claude debater: %q", got)
	}
	if got := cl.ForRole(RoleReviewer).Command; slices.Contains(got, "--tools") {
		t.Errorf("claude reviewer set to all: %q", got)
	}
	if got := cl.ForRole(RoleImplementer).Command; !containsRun(got, []string{"--tools", "Read,Edit,Write,Bash"}) {
		t.Errorf("claude implementer keeps the preset's: %q", got)
	}
	cx, _ := c.Agent("codex")
	if got := cx.ForRole(RoleDebater).Command; slices.Contains(got, "web_search=disabled") || !slices.Contains(got, "features.goals=false") {
		t.Errorf("codex debater with web_search: %q", got)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agents:\n  claude:\n    tools:\n      debater: [Bash, Raed]\n", `w.yaml:4: agents.claude.tools.debater[1]: "Raed" is not a tool of claude (did you mean "Read"?)`},
		{"agents:\n  claude:\n    tools:\n      debate: [Bash]\n", `w.yaml:4: agents.claude.tools.debate: unknown key (did you mean "debater"?)`},
		{"agents:\n  claude:\n    tools:\n      debater: []\n", "w.yaml:4: agents.claude.tools.debater: is empty: claude would have no tool to write with"},
		{"agents:\n  claude:\n    tools:\n      debater: none\n", `w.yaml:4: agents.claude.tools.debater: is "none": give a list of claude's tools, like [Bash], or all`},
		{"agents:\n  mine:\n    command: [x, '{prompt}']\n    tools:\n      debater: [Bash]\n", "w.yaml:5: agents.mine.tools: applies to the presets"},
		{"agents:\n  claude:\n    command: [claude, -p, '{prompt}']\n    tools:\n      debater: [Bash]\n", "w.yaml:5: agents.claude.tools: cannot go with command: of your own"},
	} {
		_, err := Parse("w.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	// A preset agent with a command of its own has no role tools.
	c, err = Parse("w.yaml", []byte("agents:\n  claude:\n    command: [claude, -p, '{prompt}']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cl, _ := c.Agent("claude"); cl.Tools != nil || slices.Contains(cl.ForRole(RoleDebater).Command, "--tools") {
		t.Errorf("own command got role tools: %+v", cl.Tools)
	}
}

// Every preset role has a measured fixed cost, and a turn's budget grows
// with the record twice over (read, then carried by the next call).
func TestTurnBudget(t *testing.T) {
	c := Default()
	for _, name := range PresetNames {
		a, _ := c.Agent(name)
		for _, role := range Roles {
			if a.FixedTokens(role) == 0 {
				t.Errorf("%s as %s has no fixed cost", name, role)
			}
		}
		if d := a.TurnBudget(RoleDebater, false, 4000, 40000) - a.TurnBudget(RoleDebater, false, 4000, 0); d != 20000 {
			t.Errorf("%s: 40,000 bytes of record add %d tokens to a turn, want 20,000", name, d)
		}
	}
	// A codex debater in a worktree keeps codex's instructions: its
	// budget is the implementer's fixed part, which keeps them too, within
	// a tenth; an implementer has none of walkie's to keep, and claude's
	// and gemini's instructions are their own in every role.
	codex, _ := c.Agent("codex")
	if own, impl := codex.FixedTokensOwn(RoleDebater, true), codex.FixedTokens(RoleImplementer); own < impl*9/10 || own > impl*11/10 {
		t.Errorf("codex debater with its own instructions: %d a call, the implementer %d", own, impl)
	}
	if codex.FixedTokensOwn(RoleImplementer, true) != codex.FixedTokens(RoleImplementer) {
		t.Error("an implementer's own instructions were counted twice")
	}
	for _, name := range []string{"claude", "gemini"} {
		if a, _ := c.Agent(name); a.FixedTokensOwn(RoleDebater, true) != a.FixedTokens(RoleDebater) {
			t.Errorf("%s: own instructions changed the budget", name)
		}
	}
	own, err := Parse("w.yaml", []byte("agents:\n  claude:\n    command: [claude, -p, '{prompt}']\n    model: m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := own.Agent("claude"); a.TurnBudget(RoleDebater, true, 100, 100) != 0 {
		t.Error("a command of one's own has a budget")
	}
}
