package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/config"
)

func TestRecordedArgv(t *testing.T) {
	prompt := "You are claude.\nAppend turn 3."
	tests := []struct {
		argv, want []string
	}{
		{[]string{"claude", "-p", prompt, "--model", "claude-opus-4-8"}, []string{"claude", "-p", "{prompt}", "--model", "claude-opus-4-8"}},
		{[]string{"tool", "--prompt=" + prompt}, []string{"tool", "--prompt={prompt}"}},
		{[]string{"tool", "--api-key", "abc123def456", "--token=xyz789xyz789", "-k", "v"}, []string{"tool", "--api-key", Redacted, "--token=" + Redacted, "-k", "v"}},
		{[]string{"codex", "-c", "api_key=s3cr3t-value", "-c", "model_reasoning_effort=low"}, []string{"codex", "-c", "api_key=" + Redacted, "-c", "model_reasoning_effort=low"}},
		{[]string{"curl", "-H", "Authorization: Bearer abcdefghijkl", "-H", "X-Auth-Token: q1w2e3r4t5"}, []string{"curl", "-H", "Authorization: " + Redacted, "-H", "X-Auth-Token: " + Redacted}},
		{[]string{"tool", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "ghp_abcdefghijklmnopqrstuvwxyz0123"}, []string{"tool", Redacted, Redacted}},
		{[]string{"tool", "--secret", "--verbose"}, []string{"tool", "--secret", "--verbose"}},        // a flag without a value
		{[]string{"tool", "my-env-value-1234"}, []string{"tool", Redacted}},                           // a secret the session's env holds
		{[]string{"tool", "--keyboard-layout=us"}, []string{"tool", "--keyboard-layout=" + Redacted}}, // errs on the safe side
	}
	for _, tt := range tests {
		got := RecordedArgv(tt.argv, prompt, []string{"my-env-value-1234", "short"})
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q:\n got %q\nwant %q", tt.argv, got, tt.want)
		}
	}
	if got := secretValues([]string{"ANTHROPIC_API_KEY=k1", "GATEWAY_TOKEN=t1", "LANG=C", "EMPTY_KEY="}); !slices.Equal(got, []string{"k1", "t1"}) {
		t.Errorf("secret values %q", got)
	}
	if h := PromptHash("x"); h != "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881" || PromptHash("") != "" {
		t.Errorf("hash %s", h)
	}
}

func FuzzRecordedArgv(f *testing.F) {
	f.Add("claude", "-p", "PROMPT", "sk-ant-abcdefghijklmnopqrst")
	f.Add("--api-key", "abc", "=", "--token=x")
	f.Fuzz(func(t *testing.T, a, b, c, secret string) {
		argv := []string{a, b, c, secret}
		got := RecordedArgv(argv, "", []string{secret})
		if len(got) != len(argv) {
			t.Fatalf("%d elements from %d", len(got), len(argv))
		}
		if again := RecordedArgv(got, "", []string{secret}); !slices.Equal(again, got) && len(secret) >= 8 && !strings.Contains(Redacted, secret) {
			t.Fatalf("not stable: %q then %q", got, again)
		}
		if len(secret) >= 8 && !strings.Contains(Redacted, secret) {
			for _, g := range got {
				if strings.Contains(g, secret) {
					t.Fatalf("%q still holds the secret %q", got, secret)
				}
			}
		}
	})
}

// The version is asked of a preset's CLI once per engine, as the agent
// (its environment and HOME), and recorded with each attempt, together
// with the command, the prompt's hash, the model and the effort.
func TestProvenance(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "versions")
	// A stand-in for a preset's CLI: answers --version (and counts it),
	// otherwise writes the result.
	cli := filepath.Join(dir, "fakecli")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\nif [ \"$1\" = --version ]; then echo x >> "+count+"; echo 'Warning: noise'; echo '9.8.7 (Fake CLI)'; exit 0; fi\necho done >> \"$OUT\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.txt")
	a := config.Agent{Name: "fake", Preset: "claude", Command: []string{cli, "-p", "{prompt}", "--api-key", "{model}"}, Model: "m-1", Effort: "low",
		Env: map[string]string{"OUT": out, "FAKE_API_KEY": "abcdefgh12345678"}, EnvAllow: config.DefaultEnvAllow, Dir: dir,
		Usage: config.UsageNone, Timing: config.Timing{Timeout: 10e9, Grace: 1e8, KillGrace: 5e8},
		Boundary: unsandboxed} // it counts its --version calls beside itself
	e := New(config.Default(), nil)
	defer e.Close()
	for i := range 3 {
		r, err := e.Run(context.Background(), Job{Agent: a, Vars: config.Vars{Prompt: "the prompt"}, Transcript: filepath.Join(dir, "t"), Result: out})
		if err != nil {
			t.Fatal(err)
		}
		p := r.Provenance
		want := Provenance{Argv: []string{cli, "-p", "{prompt}", "--api-key", Redacted}, PromptSHA256: PromptHash("the prompt"),
			CLIVersion: "9.8.7 (Fake CLI)", Model: "m-1", Effort: "low"}
		if !slices.Equal(p.Argv, want.Argv) || p.PromptSHA256 != want.PromptSHA256 || p.CLIVersion != want.CLIVersion || p.Model != want.Model || p.Effort != want.Effort {
			t.Errorf("run %d: provenance\n got %+v\nwant %+v", i, p, want)
		}
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "x") != 1 {
		t.Errorf("--version asked %d times, want once per engine", strings.Count(string(b), "x"))
	}
	// Not a preset: never asked, since --version may do anything.
	a.Preset = ""
	r, err := e.Run(context.Background(), Job{Agent: a, Vars: config.Vars{Prompt: "p"}, Result: out})
	if err != nil || r.Provenance.CLIVersion != "" {
		t.Errorf("own command: version %q, %v", r.Provenance.CLIVersion, err)
	}
}

func TestUnpriced(t *testing.T) {
	cfg := config.Default()
	cfg.Path = "w.yaml"
	agent := func(name string) config.Agent {
		a, err := cfg.Agent(name)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, name := range []string{"claude", "codex", "gemini"} {
		if why := Unpriced(cfg, agent(name)); why != "" {
			t.Errorf("the %s preset as shipped: %s", name, why)
		}
	}
	codex := agent("codex")
	codex.Model = "gpt-9-new"
	if why := Unpriced(cfg, codex); !strings.Contains(why, "add pricing.models.gpt-9-new: {input: USD, output: USD}") || !strings.Contains(why, "w.yaml") {
		t.Errorf("unpriced model: %s", why)
	}
	codex.Model = ""
	if why := Unpriced(cfg, codex); !strings.Contains(why, "agents.codex.model is empty") {
		t.Errorf("no model: %s", why)
	}
	own := config.Agent{Name: "mine", Usage: config.UsageNone}
	if why := Unpriced(cfg, own); !strings.Contains(why, "mine reports no usage") || !strings.Contains(why, "agents.mine.usage") {
		t.Errorf("no usage: %s", why)
	}
	gem := agent("gemini")
	gem.Model = "gemini-3.8-flash"
	if why := Unpriced(cfg, gem); why != "" {
		t.Errorf("a priced model: %s", why)
	}
}
