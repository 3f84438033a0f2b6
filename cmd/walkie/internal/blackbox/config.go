package blackbox

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Config is a test's walkie.yaml.
type Config struct {
	Top      string            // top-level YAML written before defaults:
	Defaults map[string]string // defaults: keys, by name, as YAML values
	Agents   []Agent
}

// Agent is one entry under agents:.
type Agent struct {
	Name string
	Keys map[string]string // keys of the entry, by name, as YAML values
	More string            // more YAML of the entry, indented four spaces
}

// FakeDefaults are the defaults of a debate between scripted fake agents
// whose scripts are in dir (ScriptedAgent): limits short enough that a
// hung or killed session ends in a second or two, one retry, the agents'
// HOME inherited, the marker passed on, and their sandboxes let them
// write their counters, in dir/fake, and nothing else of the test's.
func FakeDefaults(dir string) map[string]string {
	return map[string]string{
		"timeout":       "20s",
		"stall":         "10s",
		"grace":         "100ms",
		"kill_grace":    "500ms",
		"retries":       "1",
		"home":          "inherit",
		"env_allow":     "[" + MarkerVar + "]",
		"sandbox_write": fmt.Sprintf("[%q]", FakeDir(dir)),
	}
}

// FakeDir is the folder beside the scripts in dir where the fake agents
// count their runs: one of their own, so that a sandbox can grant it
// without the debate's folder.
func FakeDir(dir string) string { return filepath.Join(dir, "fake") }

// FakeAgentCommand is the command: value that runs the fake agent
// (cmd/fakeagent) with script; state, unless "", is the file where it
// counts its runs (Invocations).
func FakeAgentCommand(script, state string) string {
	cmd := fmt.Sprintf(`[fakeagent, --file, "{file}", --agent, "{agent}", --script, %q`, script)
	if state != "" {
		cmd += fmt.Sprintf(`, --state, %q`, state)
	}
	return cmd + "]"
}

// ScriptedAgent writes script to dir/NAME.yaml and returns the agent
// entry that runs the fake agent with it, counting its runs in
// FakeDir(dir)/NAME.state, its usage read as claude's JSON, its sandbox
// letting it read the script wherever it works; keys are laid over those
// (a command of its own replaces the fake agent).
func ScriptedAgent(t testing.TB, dir, name, script string, keys map[string]string) Agent {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(script+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(FakeDir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	a := Agent{Name: name, Keys: map[string]string{
		"command":      FakeAgentCommand(path, filepath.Join(FakeDir(dir), name+".state")),
		"usage":        "claude-json",
		"sandbox_read": fmt.Sprintf("[%q]", path),
	}}
	maps.Copy(a.Keys, keys)
	return a
}

// String is the config as YAML; keys are written in sorted order.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString(c.Top + "\ndefaults:\n")
	for _, k := range slices.Sorted(maps.Keys(c.Defaults)) {
		fmt.Fprintf(&b, "  %s: %s\n", k, c.Defaults[k])
	}
	b.WriteString("agents:\n")
	for _, a := range c.Agents {
		fmt.Fprintf(&b, "  %s:\n", a.Name)
		for _, k := range slices.Sorted(maps.Keys(a.Keys)) {
			fmt.Fprintf(&b, "    %s: %s\n", k, a.Keys[k])
		}
		b.WriteString(a.More)
	}
	return b.String()
}

// Write writes the config to path.
func (c Config) Write(t testing.TB, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(c.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
