package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRoleInstructions: the codex preset replaces codex's own model
// instructions in the roles that read and write one file, and only
// there; what it sends instead is short, since it goes with every call.
func TestRoleInstructions(t *testing.T) {
	c := Default()
	for _, tc := range []struct {
		agent, role string
		want        bool
	}{
		{"codex", RoleDebater, true},
		{"codex", RoleReviewer, true},
		{"codex", RolePhase, true},
		{"codex", RoleDistiller, true},
		{"codex", RoleImplementer, false}, // it edits code: codex's own guidance stays
		{"claude", RoleDebater, false},
		{"gemini", RoleDebater, false},
	} {
		a, err := c.Agent(tc.agent)
		if err != nil {
			t.Fatal(err)
		}
		got := a.ForRole(tc.role).Instructions
		if (got != "") != tc.want || tc.want && got != RoleInstructions(tc.role) {
			t.Errorf("%s as %s: instructions %q, want some: %t", tc.agent, tc.role, got, tc.want)
		}
		if a.Instructions != "" {
			t.Errorf("ForRole changed the agent it was called on: %q", a.Instructions)
		}
	}
	for _, role := range instructionRoles {
		text := RoleInstructions(role)
		if n := len(text); n > 2500 {
			t.Errorf("%s's instructions are %d bytes: every model call sends them", role, n)
		}
		if strings.Contains(text, "apply_patch") {
			t.Errorf("%s's instructions speak of editing code", role)
		}
	}
	// A role set to all, or a command of one's own, is the CLI as it comes.
	a, _ := c.Agent("codex")
	a.Tools[RoleDebater] = nil
	if got := a.ForRole(RoleDebater).Instructions; got != "" {
		t.Errorf("tools: {debater: all} still replaces codex's instructions")
	}
}

// TestWithInstructionsFile: the flag goes before codex exec's positional
// prompt, and nowhere for a command that ends otherwise.
func TestWithInstructionsFile(t *testing.T) {
	a, _ := Default().Agent("codex")
	argv, err := a.Argv(Vars{Prompt: "the prompt"})
	if err != nil {
		t.Fatal(err)
	}
	got := a.WithInstructionsFile(argv, "/cache/i.md")
	if n := len(got); got[n-1] != "the prompt" || !slices.Equal(got[n-3:n-1], []string{"-c", "model_instructions_file=/cache/i.md"}) {
		t.Errorf("argv %q", got)
	}
	if len(argv) != len(got)-2 {
		t.Errorf("the argv given was changed: %q", argv)
	}
	own := Agent{Command: []string{"codex", "exec", "{prompt}", "--json"}}
	if got := own.WithInstructionsFile([]string{"codex", "exec", "p", "--json"}, "/i"); got[len(got)-1] != "model_instructions_file=/i" {
		t.Errorf("argv %q", got)
	}
}

// TestOwnInstructions: a model_instructions_file the user set (in the
// command, in the config.toml the session's codex loads, at its top
// level or in its active profile) wins over walkie's.
func TestOwnInstructions(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return filepath.Dir(p)
	}
	mine := "model_instructions_file = \"/home/me/mine.md\"\n"
	profiled := "profile = \"deep\"\n[profiles.deep]\nmodel_instructions_file = \"/home/me/deep.md\"\n[profiles.quick]\nmodel = \"gpt-5.5\"\n"
	codexHome := write("ch/config.toml", mine)
	userHome := filepath.Dir(write("home/.codex/config.toml", profiled))
	plainHome := write("plain/config.toml", "model = \"gpt-5.5\"\n")
	brokenHome := write("broken/config.toml", "model = [\n")
	argv := []string{"codex", "exec", "p"}
	private := Agent{Name: "codex", Preset: "codex", Home: HomePrivate}
	inherit := Agent{Name: "codex", Preset: "codex", Home: HomeInherit}
	files := func(text string) Agent {
		a := private
		a.HomeFiles = map[string]string{".codex/config.toml": text}
		return a
	}
	for _, tc := range []struct {
		name            string
		a               Agent
		argv            []string
		codexHome, home string
		want            bool
	}{
		{"nothing set", private, argv, "", "", false},
		{"in the command", private, []string{"codex", "exec", "-c", "model_instructions_file=/mine.md", "p"}, "", "", true},
		{"in the command, --config", private, []string{"codex", "exec", "--config=model_instructions_file=\"/mine.md\"", "p"}, "", "", true},
		{"home_files", files(mine), argv, "", "", true},
		{"home_files, profile", files(profiled), argv, "", "", true},
		{"home_files, another profile picked", files(profiled), []string{"codex", "exec", "-p", "quick", "p"}, "", "", false},
		{"home_files, other keys", files("model = \"gpt-5.5\"\n"), argv, "", "", false},
		{"CODEX_HOME", private, argv, codexHome, "", true},
		{"CODEX_HOME without it", files(mine), argv, plainHome, "", false}, // CODEX_HOME's file is the one codex loads
		{"inherited HOME", inherit, argv, "", userHome, true},
		{"inherited HOME, --profile=quick", inherit, []string{"codex", "exec", "--profile=quick", "p"}, "", userHome, false},
		{"inherited HOME without a file", inherit, argv, "", t.TempDir(), false},
		{"a config codex cannot load", private, argv, brokenHome, "", true},
	} {
		if got := tc.a.OwnInstructions(tc.argv, tc.codexHome, tc.home); got != tc.want {
			t.Errorf("%s: own instructions %t, want %t", tc.name, got, tc.want)
		}
	}
}
