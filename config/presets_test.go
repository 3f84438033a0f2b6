package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPresets(t *testing.T) {
	c := Default()
	v := Vars{Prompt: "PROMPT", File: "/w/d.walkie.md", Agent: "x", Dir: "/w", Turn: 1, Round: 1}
	tests := []struct {
		name      string
		argv      string
		usage     string
		envAllow  []string
		env       map[string]string
		ruleMatch map[string]string // sample screen text → outcome
	}{
		{
			name:     "claude",
			argv:     "claude -p PROMPT --output-format json --permission-mode acceptEdits --allowedTools Read,Grep,Glob,Edit,Write,Bash(cat:*),Bash(printf:*) --no-session-persistence",
			usage:    UsageClaudeJSON,
			envAllow: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_MAX_RETRIES", "PATH", "LC_ALL"},
			env:      map[string]string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
			ruleMatch: map[string]string{
				"Not logged in · Please run /login":               "auth",
				"Claude AI usage limit reached|1764460800":        "blocked-prompt",
				"You've hit your limit · resets 3pm (UTC)":        "blocked-prompt",
				"5-hour limit reached ∙ resets 3pm":               "blocked-prompt",
				"I read the file and appended my turn; no limits": "",
			},
		},
		{
			name:     "codex",
			argv:     "codex exec --skip-git-repo-check -s workspace-write --json --ephemeral -C /w PROMPT",
			usage:    UsageCodexJSONL,
			envAllow: []string{"OPENAI_API_KEY", "CODEX_HOME", "TERM"},
			ruleMatch: map[string]string{
				"Not inside a trusted directory and --skip-git-repo-check was not specified.": "blocked-prompt",
				"ERROR: Reconnecting... waiting for network":                                  "stalled",
				`{"type":"turn.completed","usage":{"input_tokens":10}}`:                       "",
			},
		},
		{
			name:     "gemini",
			argv:     "gemini -p PROMPT -o json --approval-mode yolo --skip-trust",
			usage:    UsageGeminiJSON,
			envAllow: []string{"GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_API_KEY"},
			env:      map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"},
			ruleMatch: map[string]string{
				"Please set an Auth method in your settings.json": "auth",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := c.Agent(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if a.Name != tt.name || a.Preset != tt.name {
				t.Errorf("Name %q Preset %q", a.Name, a.Preset)
			}
			argv, err := a.Argv(v)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(argv, " "); got != tt.argv {
				t.Errorf("argv\n got %s\nwant %s", got, tt.argv)
			}
			if !slices.Contains(argv, "PROMPT") {
				t.Error("the prompt is not one whole argument")
			}
			if a.Usage != tt.usage {
				t.Errorf("Usage %q", a.Usage)
			}
			for _, e := range tt.envAllow {
				if !envAllowed(e, a.EnvAllow) {
					t.Errorf("%s not passed through (env_allow %v)", e, a.EnvAllow)
				}
			}
			for _, e := range []string{"HOME", "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK"} {
				if envAllowed(e, a.EnvAllow) {
					t.Errorf("%s passed through by default", e)
				}
			}
			for k, want := range tt.env {
				if a.Env[k] != want {
					t.Errorf("env %s = %q, want %q", k, a.Env[k], want)
				}
			}
			if a.Home != HomePrivate || a.Dir != DefaultDir || a.Prompt != DefaultPrompt {
				t.Errorf("Home %q Dir %q Prompt %q", a.Home, a.Dir, a.Prompt)
			}
			if a.Timeout != DefaultTimeout || a.Stall != DefaultStall || a.Grace != DefaultGrace ||
				a.KillGrace != DefaultKillGrace || a.Retries != DefaultRetries {
				t.Errorf("defaults not applied: %+v", a)
			}
			for text, want := range tt.ruleMatch {
				got := ""
				if r, ok := firstRule(t, a.Rules, text); ok {
					got = r.Outcome
					if r.Detail == "" {
						t.Errorf("rule %q has no detail", r.Match)
					}
				}
				if got != want {
					t.Errorf("screen %q → outcome %q, want %q", text, got, want)
				}
			}
		})
	}
}

func TestGeminiHomeFiles(t *testing.T) {
	a, _ := Default().Agent("gemini")
	s := a.HomeFiles[".gemini/settings.json"]
	for _, want := range []string{`"selectedType":"gemini-api-key"`, `"enableAutoUpdate":false`} {
		if !strings.Contains(s, want) {
			t.Errorf("settings.json %s lacks %s", s, want)
		}
	}
}

func TestMergeWithPreset(t *testing.T) {
	src := `
agents:
  claude:
    timeout: 30m
    model: claude-opus-4-5
    env: {CLAUDE_CODE_MAX_RETRIES: "0"}
    env_allow: [HTTPS_PROXY]
    home: inherit
    rules:
      - match: "Do you want to proceed\\?"
        reply: "1\r"
  claude-2:
    preset: claude
    stall: 1m
  codex:
    command: [codex, exec, -m, "{model}", "{prompt}"]
    model: gpt-5
`
	c, err := Parse("w.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Agent("claude")
	if a.Timeout != 30*time.Minute || a.Stall != DefaultStall || a.Model != "claude-opus-4-5" || a.Home != HomeInherit {
		t.Errorf("claude %+v", a)
	}
	if a.Env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] != "1" || a.Env["CLAUDE_CODE_MAX_RETRIES"] != "0" {
		t.Errorf("env not merged: %v", a.Env)
	}
	if !envAllowed("HTTPS_PROXY", a.EnvAllow) || !envAllowed("ANTHROPIC_API_KEY", a.EnvAllow) || !envAllowed("PATH", a.EnvAllow) {
		t.Errorf("env_allow not merged: %v", a.EnvAllow)
	}
	if len(a.Rules) != 3 || a.Rules[0].Reply != "1\r" || a.Rules[1].Outcome != "auth" {
		t.Errorf("user rule should come first, then the preset's: %+v", a.Rules)
	}
	if a.Command[0] != "claude" || a.Usage != UsageClaudeJSON {
		t.Errorf("preset fields lost: %v %q", a.Command, a.Usage)
	}

	b, err := c.Agent("claude-2")
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "claude-2" || b.Preset != "claude" || b.Command[0] != "claude" || b.Stall != time.Minute || b.Timeout != DefaultTimeout {
		t.Errorf("claude-2 %+v", b)
	}
	if b.Model != "" || b.Home != HomePrivate {
		t.Errorf("claude-2 picked up claude's overrides: %+v", b)
	}
	argv, _ := b.Argv(Vars{Prompt: "p", Agent: "claude-2"})
	if argv[2] != "p" {
		t.Errorf("argv %v", argv)
	}

	x, _ := c.Agent("codex")
	argv, err = x.Argv(Vars{Prompt: "p"})
	if err != nil || strings.Join(argv, " ") != "codex exec -m gpt-5 p" {
		t.Errorf("codex argv %v, %v", argv, err)
	}
	if x.Usage != UsageCodexJSONL || len(x.Rules) != 2 {
		t.Errorf("codex preset fields lost with a new command: %+v", x)
	}
	// The preset is untouched for the next Parse.
	if p, _ := Default().Agent("claude"); p.Timeout != DefaultTimeout || len(p.Rules) != 2 || len(p.Env) != 1 {
		t.Errorf("preset mutated: %+v", p)
	}
}

func TestPresetKeyAnywhere(t *testing.T) {
	// preset: after other keys still sets the base first.
	c, err := Parse("w.yaml", []byte("agents:\n  rev:\n    timeout: 1m\n    preset: gemini\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Agent("rev")
	if a.Command[0] != "gemini" || a.Timeout != time.Minute {
		t.Errorf("%+v", a)
	}
}

func TestPresetEmptyDropsPreset(t *testing.T) {
	// An agent named like a preset can opt out with preset: "" and its own command.
	c, err := Parse("w.yaml", []byte("agents:\n  claude:\n    preset: \"\"\n    command: [my-claude-wrapper, \"{prompt}\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Agent("claude")
	if a.Preset != "" || a.Usage != UsageNone || len(a.Rules) != 0 || len(a.Env) != 0 || envAllowed("ANTHROPIC_API_KEY", a.EnvAllow) {
		t.Errorf("%+v", a)
	}
}

func TestAgentUnknown(t *testing.T) {
	c, err := Parse("walkie.yaml", []byte("agents:\n  fake-a:\n    command: [fake]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Agent("fake-b")
	want := `config: no agent "fake-b" (did you mean "fake-a"?); known agents: claude, codex, fake-a, gemini (add it under agents: in walkie.yaml)`
	if err == nil || err.Error() != want {
		t.Errorf("err\n got %v\nwant %s", err, want)
	}
	_, err = c.Agent("zzz")
	if err == nil || strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), "known agents: claude, codex, fake-a, gemini") {
		t.Errorf("err %v", err)
	}
}

func TestAgentIsACopy(t *testing.T) {
	c := Default()
	a, _ := c.Agent("claude")
	a.Command[0] = "evil"
	a.Env["X"] = "y"
	a.Rules[0].Outcome = "crashed"
	b, _ := c.Agent("claude")
	if b.Command[0] != "claude" || b.Env["X"] != "" || b.Rules[0].Outcome != "auth" {
		t.Errorf("Agent returned shared state: %+v", b)
	}
}

func firstRule(t *testing.T, rules []Rule, text string) (Rule, bool) {
	t.Helper()
	for _, r := range rules {
		if mustCompile(t, r.Match).MatchString(text) {
			return r, true
		}
	}
	return Rule{}, false
}
