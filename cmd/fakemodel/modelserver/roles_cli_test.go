//go:build linux

package modelserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

// The presets' tools per role, as the pinned CLIs take them: each CLI is
// run with its preset's command for each role, and the tools its first
// model call offers are exactly the role's (claude --tools, gemini's
// tools.core), or lack what the role switched off (codex's -c switches),
// with walkie's instructions where the role has them (codex's
// model_instructions_file), as the engine passes them.
// A claude call costs at most 6,000 tokens before the prompt (issue 29),
// whatever the role.
func TestPresetRolesCLI(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	for _, name := range config.PresetNames {
		for _, c := range sessionsOf(name) {
			role, own := c.role, c.ownInstructions
			t.Run(name+"/"+c.label, func(t *testing.T) {
				t.Parallel()
				a, err := cfg.Agent(name)
				if err != nil {
					t.Fatal(err)
				}
				a = a.ForRole(role)
				if own {
					a.Instructions = ""
				}
				want, _ := a.RoleTools(role)
				srv := Start(t, Script{Default: Text("done"), Func: func(r *Request) (Reply, bool) {
					// gemini without -m asks a small model to route the turn
					// first, and waits for valid JSON.
					if r.Vendor == Gemini && strings.HasSuffix(r.Path, ":generateContent") {
						return Text(`{"complexity_reasoning":"short","complexity_score":1}`), true
					}
					return Reply{}, false
				}})
				argv, err := a.Argv(config.Vars{Prompt: prompt})
				if err != nil {
					t.Fatal(err)
				}
				if a.Instructions != "" {
					// As the engine gives them to a session.
					path := filepath.Join(t.TempDir(), "instructions.md")
					if err := os.WriteFile(path, []byte(a.Instructions), 0o444); err != nil {
						t.Fatal(err)
					}
					argv = a.WithInstructionsFile(argv, path)
				}
				run := cliRun{bin: sessiontest.RealCLI(t, name), args: argv[1:], home: t.TempDir()}
				switch name {
				case "claude":
					run.env = ClaudeEnv(srv.URL)
				case "codex":
					run.env, err = WriteCodexHome(t.TempDir(), srv.URL)
				case "gemini":
					run.env = []string{"GEMINI_API_KEY=" + FakeAPIKey, "GOOGLE_GEMINI_BASE_URL=" + srv.URL}
					err = writeHomeFiles(run.home, a.HomeFiles)
					run.limit = 2 * time.Minute
				}
				if err != nil {
					t.Fatal(err)
				}
				res := run.run(t)
				wantExit(t, res, 0)
				reqs := srv.ModelRequests(vendorOf(name))
				if len(reqs) == 0 {
					t.Fatal("no model call")
				}
				call := reqs[len(reqs)-1] // gemini's router comes first
				got := offeredTools(call)
				switch name {
				case "codex":
					for _, off := range []string{"web_search", "view_image", "create_goal", "spawn_agent", "sleep", "request_user_input"} {
						if slices.Contains(got, off) && !(off == "view_image" && slices.Contains(want, "view_image")) {
							t.Errorf("codex as %s still offers %s: %v", role, off, got)
						}
					}
				default:
					slices.Sort(got)
					w := slices.Sorted(slices.Values(want))
					if !slices.Equal(got, w) {
						t.Errorf("%s as %s offers %v, want %v", name, role, got, w)
					}
				}
				n, err := call.Tokens()
				if err != nil {
					t.Fatal(err)
				}
				q, _ := CountTokens([]byte(`"` + prompt + `"`))
				if name == "claude" && n-q > 6000 {
					t.Errorf("a claude call as %s costs %d tokens before the prompt, over 6,000", role, n-q)
				}
				if fixed := a.FixedTokensOwn(role, own); fixed < (n-q)*9/10 || fixed > (n-q)*11/10 {
					t.Errorf("%s as %s: a call costs %d tokens before the prompt; the budget says %d", name, role, n-q, fixed)
				}
				t.Logf("%s as %s: %d tokens a call before the prompt; %d tools: %s", name, role, n-q, len(got), strings.Join(got, ", "))
			})
		}
	}
}

// roleSession is one way a preset's sessions run: a role, and whether
// the CLI keeps its own model instructions in it.
type roleSession struct {
	label, role     string
	ownInstructions bool
}

// sessionsOf are the sessions TestPresetRolesCLI measures for a preset:
// each role, and for codex a debater in a worktree of its own, which
// keeps codex's instructions (engine.TurnAttempt).
func sessionsOf(preset string) []roleSession {
	var out []roleSession
	for _, role := range config.Roles {
		out = append(out, roleSession{label: role, role: role})
	}
	if preset == "codex" {
		out = append(out, roleSession{label: config.RoleDebater + "/own-instructions", role: config.RoleDebater, ownInstructions: true})
	}
	return out
}

func vendorOf(cli string) Vendor {
	return map[string]Vendor{"claude": Anthropic, "codex": OpenAI, "gemini": Gemini}[cli]
}

// writeHomeFiles writes a preset's home_files into home, as a session does.
func writeHomeFiles(home string, files map[string]string) error {
	for rel, content := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// offeredTools are the names of the tools a model call offers, nested
// ones included (codex with gpt-6.2-sol offers its tools inside a
// developer message, in namespaces).
func offeredTools(r *Request) []string {
	var names []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				switch k {
				case "tools", "functionDeclarations":
					for _, t := range asList(e) {
						if n, ok := field[string](t, "name"); ok && !hasKey(t, "tools") {
							names = append(names, n)
						} else if ty, ok := field[string](t, "type"); ok && !hasKey(t, "tools") && !hasKey(t, "functionDeclarations") {
							names = append(names, ty)
						}
					}
				}
				walk(e)
			}
		}
	}
	walk(r.Body)
	slices.Sort(names)
	return slices.Compact(names)
}

func asList(v any) []any { l, _ := v.([]any); return l }

func hasKey(v any, k string) bool {
	m, ok := v.(map[string]any)
	_, has := m[k]
	return ok && has
}
