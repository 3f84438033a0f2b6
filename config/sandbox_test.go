package config

import (
	"strings"
	"testing"
)

// Which level a session gets: required from either side wins, then the
// agent's own setting, then the role's, then defaults.
func TestSandboxFor(t *testing.T) {
	for _, tt := range []struct {
		name, file, agent, role string
		want                    string
		at                      string
	}{
		{"built-in", "", "claude", RoleDebater, SandboxAuto, ""},
		{"defaults", "defaults: {sandbox: off}\n", "claude", RoleDebater, SandboxOff, "w.yaml:1: defaults.sandbox"},
		{"role over defaults", "defaults: {sandbox: off}\nsandbox: {reviewer: required}\n", "claude", RoleReviewer, SandboxRequired, "w.yaml:2: sandbox.reviewer"},
		{"role, other role", "sandbox: {reviewer: off}\n", "claude", RoleDebater, SandboxAuto, ""},
		{"agent over role", "agents:\n  claude: {sandbox: off}\nsandbox: {debater: auto}\n", "claude", RoleDebater, SandboxOff, "w.yaml:2: agents.claude.sandbox"},
		{"required role over agent's off", "agents:\n  claude: {sandbox: off}\nsandbox: {debater: required}\n", "claude", RoleDebater, SandboxRequired, "w.yaml:3: sandbox.debater"},
		{"required agent over role's off", "agents:\n  claude: {sandbox: required}\nsandbox: {debater: off}\n", "claude", RoleDebater, SandboxRequired, "w.yaml:2: agents.claude.sandbox"},
		{"defaults' required is not the agent's own", "defaults: {sandbox: required}\nsandbox: {grader: off}\n", "codex", RoleGrader, SandboxRequired, "w.yaml:1: defaults.sandbox"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse("w.yaml", []byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			a, err := c.Agent(tt.agent)
			if err != nil {
				t.Fatal(err)
			}
			got := c.SandboxFor(a, tt.role)
			if got.Level != tt.want || got.At != tt.at {
				t.Errorf("SandboxFor = %+v, want %s at %q", got, tt.want, tt.at)
			}
		})
	}
}

func TestSandboxErrors(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"defaults:\n  sandbox: on\n", `config w.yaml:2: defaults.sandbox: "on" is not one of auto, required, off`},
		{"sandbox:\n  reviewers: off\n", `config w.yaml:2: sandbox.reviewers: unknown key (did you mean "reviewer"?)`},
		{"agents:\n  claude:\n    key_proxy: yes\n", `config w.yaml:3: agents.claude.key_proxy: "yes" is not one of auto, on, off`},
		{"agents:\n  claude:\n    sandbox_read: [\"{dri}/x\"]\n", `agents.claude.sandbox_read[0]`},
	} {
		_, err := Parse("w.yaml", []byte(tt.file))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %s", tt.file, err, tt.want)
		}
	}
}

func TestSandboxPaths(t *testing.T) {
	t.Setenv("HOME", "/home/me")
	t.Setenv("TOOLS", "/opt/tools")
	c, err := Parse("w.yaml", []byte("defaults:\n  sandbox_read: [$TOOLS]\nagents:\n  x:\n    command: [x]\n    sandbox_read: [\"{dir}/docs\"]\n    sandbox_write: [\"~/go/pkg/mod\", cache]\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Agent("x")
	read, write, err := a.SandboxPaths(Vars{Dir: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(read, ",") != "/opt/tools,/w/docs" || strings.Join(write, ",") != "/home/me/go/pkg/mod,cache" {
		t.Errorf("read %q, write %q", read, write)
	}
}
