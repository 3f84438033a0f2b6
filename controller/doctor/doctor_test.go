package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
)

func TestDoctor(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho '2.1.197 (Claude Code)'\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("GEMINI_API_KEY", "")
	cfg := config.Default()

	t.Run("no key", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "")
		ck := Check(context.Background(), cfg, []string{"claude"}, map[string]bool{"claude": true})[0]
		if ck.Binary != filepath.Join(bin, "claude") || ck.Version != "2.1.197" {
			t.Errorf("binary %q version %q", ck.Binary, ck.Version)
		}
		if ck.LoggedIn != "no" || ck.CanRun() || !strings.Contains(strings.Join(ck.Problems, ";"), "ANTHROPIC_API_KEY") {
			t.Errorf("logged in %q, problems %q: want a clear not-logged-in problem", ck.LoggedIn, ck.Problems)
		}
	})
	t.Run("key", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "sk-test")
		ck := Check(context.Background(), cfg, []string{"claude"}, nil)[0]
		if ck.LoggedIn != "yes" || !ck.CanRun() {
			t.Errorf("logged in %q, problems %q", ck.LoggedIn, ck.Problems)
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		ck := Check(context.Background(), cfg, []string{"gemini"}, nil)[0]
		if ck.CanRun() || !strings.Contains(ck.Problems[0], `"gemini" not found in PATH "`+bin) {
			t.Errorf("problems %q: want the command and the PATH searched", ck.Problems)
		}
	})
	// Before the first turn: which agents' cost cannot be told, and what to
	// add to walkie.yaml (issue 13).
	t.Run("cost cannot be told", func(t *testing.T) {
		c, err := config.Parse("w.yaml", []byte("agents:\n  mine: {command: [sh]}\n  codex: {model: gpt-9}\n"))
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{
			"mine":   "mine reports no usage (usage: none)",
			"codex":  "add pricing.models.gpt-9: {input: USD, output: USD} (per million tokens) to w.yaml",
			"claude": "",
		} {
			ck := Check(context.Background(), c, []string{name}, map[string]bool{name: true})[0]
			if want == "" && ck.Unpriced != "" || !strings.Contains(ck.Unpriced, want) {
				t.Errorf("%s: unpriced %q, want %q", name, ck.Unpriced, want)
			}
			if want != "" && !strings.Contains(strings.Join(ck.Notes, ";"), "cost cannot be told: ") {
				t.Errorf("%s: notes %q", name, ck.Notes)
			}
		}
	})
	t.Run("unknown agent", func(t *testing.T) {
		ck := Check(context.Background(), cfg, []string{"nobody"}, nil)[0]
		if ck.CanRun() {
			t.Errorf("an unconfigured agent can run?")
		}
	})
}

// What doctor says of the sandbox: each role's level for the agent, and
// a required level the system cannot meet is a problem naming its line.
func TestSandboxOf(t *testing.T) {
	cfg, err := config.Parse("w.yaml", []byte("sandbox:\n  reviewer: required\n  grader: off\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cfg.Agent("claude")
	full := session.SandboxReport{Kind: "landlock", ABI: 7}
	sb, problems := sandboxOf(cfg, a, full)
	if len(problems) != 0 || sb.Levels["reviewer"] != "required" || sb.Levels["grader"] != "off" || sb.Levels["debater"] != "auto" || sb.ABI != 7 {
		t.Errorf("with Landlock: %+v, problems %q", sb, problems)
	}
	none := session.SandboxReport{Missing: []string{"Landlock is not available"}}
	_, problems = sandboxOf(cfg, a, none)
	if len(problems) != 1 || !strings.HasPrefix(problems[0], "w.yaml:2: sandbox.reviewer: the sandbox is required (reviewer sessions)") {
		t.Errorf("without Landlock: problems %q", problems)
	}
}
