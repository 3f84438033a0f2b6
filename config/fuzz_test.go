package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no input panics, and whatever parses is usable: every agent
// has a command whose placeholders expand and a prompt that renders.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "example-*.yaml"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"", "~", "[]", "a: &a [*a]", "agents: {x: {command: [\"{prompt}\"]}}",
		"agents:\n  claude:\n    preset: codex\n", "prompts: {turn: '{{.Agent}}'}",
		"agents: {x: {preset: gemini, rules: [{match: '(', reply: y}]}}",
		"limits: {per_agent_sessions: {claude: 1}}", "pricing: {models: {m: {input: 1, output: 2}}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, name := range c.AgentNames() {
			a, err := c.Agent(name)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Argv(Vars{Prompt: "p"}); err != nil {
				t.Fatalf("agent %s parsed but Argv fails: %v", name, err)
			}
			if _, err := a.WorkDir(Vars{}); err != nil {
				t.Fatalf("agent %s parsed but WorkDir fails: %v", name, err)
			}
			if _, err := a.EnvVars(Vars{}); err != nil {
				t.Fatalf("agent %s parsed but EnvVars fails: %v", name, err)
			}
			if _, err := c.RenderPrompt(a.Prompt, PromptData{Agent: name}); err != nil {
				t.Fatalf("agent %s parsed but its prompt fails: %v", name, err)
			}
		}
	})
}
