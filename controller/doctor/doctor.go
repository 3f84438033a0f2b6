package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
)

// AgentCheck is what `walkie doctor` found out about one agent.
type AgentCheck struct {
	Name     string   `json:"name"`
	Preset   string   `json:"preset,omitempty"`
	InUse    bool     `json:"in_use"`            // a participant of the debate asked about, or configured explicitly
	Binary   string   `json:"binary,omitempty"`  // resolved path of the command
	Version  string   `json:"version,omitempty"` // first line of BINARY --version
	LoggedIn string   `json:"logged_in"`         // "yes", "no", "unknown" or "n/a"
	Problems []string `json:"problems,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	// Unpriced says why the cost of the agent's turns cannot be told, and
	// what to add to the config; a budget then counts them by estimate.
	Unpriced string `json:"unpriced,omitempty"`
	// Roles are the tools a preset sends in each role and what each of
	// its model calls costs before walkie's prompt and the record.
	Roles []RoleBudget `json:"roles,omitempty"`
	// Sandbox is its sessions' boundary on this machine, role by role.
	Sandbox *AgentSandbox `json:"sandbox,omitempty"`
}

// RoleBudget is one role of a preset agent: its tools (none listed: the
// CLI's whole set) and its fixed tokens per model call (0: not known).
type RoleBudget struct {
	Role        string   `json:"role"`
	Tools       []string `json:"tools,omitempty"`
	FixedTokens int      `json:"fixed_tokens_per_call,omitempty"`
}

// roleBudgets lists a's roles, and says them in a note a person reads.
func roleBudgets(a config.Agent) ([]RoleBudget, string) {
	if a.Tools == nil {
		return nil, ""
	}
	var out []RoleBudget
	var parts []string
	for _, r := range config.Roles {
		ts, _ := a.RoleTools(r)
		out = append(out, RoleBudget{Role: r, Tools: ts, FixedTokens: a.FixedTokens(r)})
		if f := a.FixedTokens(r); f > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1fk", r, float64(f)/1000))
		} else {
			parts = append(parts, r+" the CLI's whole set")
		}
	}
	return out, "tokens a model call before the record: " + strings.Join(parts, ", ")
}

// CanRun reports whether nothing found stops the agent from taking a turn.
func (a AgentCheck) CanRun() bool { return len(a.Problems) == 0 }

// Check checks each named agent: is its binary there, which version, does
// it appear logged in (from its environment and credential files, without
// spending tokens), and is its configuration sound.
func Check(ctx context.Context, cfg *config.Config, names []string, inUse map[string]bool) []AgentCheck {
	eng := engine.New(cfg, nil)
	defer eng.Close()
	var out []AgentCheck
	for _, n := range names {
		out = append(out, doctorOne(ctx, eng, n, inUse[n]))
	}
	return out
}

func doctorOne(ctx context.Context, eng *engine.Engine, name string, inUse bool) (ck AgentCheck) {
	ck = AgentCheck{Name: name, InUse: inUse, LoggedIn: "n/a"}
	a, err := eng.Config().Agent(name)
	if err != nil {
		ck.Problems = append(ck.Problems, err.Error())
		return ck
	}
	ck.Preset = a.Preset
	var rolesNote string
	if ck.Roles, rolesNote = roleBudgets(a); rolesNote != "" {
		defer func() { ck.Notes = append(ck.Notes, rolesNote) }()
	}
	sb, problems := sandboxOf(eng.Config(), a, session.SandboxSupport())
	ck.Sandbox, ck.Problems = &sb, append(ck.Problems, problems...)
	// Said whatever else is found: a budget counts an unpriced turn by
	// estimate, which a person should know before the first one.
	if ck.Unpriced = engine.Unpriced(eng.Config(), a); ck.Unpriced != "" {
		defer func() { ck.Notes = append(ck.Notes, "cost cannot be told: "+ck.Unpriced) }()
	}
	v := config.Vars{Prompt: "doctor", File: "doctor.walkie.md", Agent: name, Dir: ".", Turn: 1, Round: 1}
	// The session a turn would get, built the way a turn's is: what the
	// agent finds in its PATH and its environment is what doctor checks.
	spec, err := eng.Spec(engine.Job{Agent: a, Vars: v})
	if err != nil {
		ck.Problems = append(ck.Problems, strings.TrimPrefix(err.Error(), engine.ErrBadInput.Error()+": "))
		return ck
	}
	env := session.Environ(spec, os.Environ())
	bin, err := session.LookPath(spec)
	if err != nil {
		ck.Problems = append(ck.Problems, err.Error())
		return ck
	}
	ck.Binary = bin
	if a.Preset != "" {
		ck.Version = versionOf(ctx, eng, a, bin)
		ck.LoggedIn, ck.Notes = loginState(a, env)
		if a.Preset == "claude" {
			// claude can say itself, without a model call: a login in
			// the system keychain or a cloud provider's credentials too.
			if yes, notes, ok := claudeAuthStatus(ctx, eng, a, bin); ok {
				ck.LoggedIn, ck.Notes = yes, notes
			}
		}
		// A note that is a problem of its own (a broken config.toml) is
		// reported as what it is, not as a missing login.
		for i := 0; i < len(ck.Notes); i++ {
			if p, ok := strings.CutPrefix(ck.Notes[i], problemPrefix); ok {
				ck.Problems = append(ck.Problems, p)
				ck.Notes = slices.Delete(ck.Notes, i, i+1)
				i--
			}
		}
		if ck.LoggedIn == "no" {
			ck.Problems = append(ck.Problems, "does not appear logged in: "+strings.Join(ck.Notes, "; "))
			ck.Notes = nil
		}
	}
	return ck
}

func envValue(env []string, key string) string { return session.EnvValue(env, key) }

var versionRe = regexp.MustCompile(`\d+\.\d+\.\d+\S*`)

// claudeAuthStatus runs BINARY auth status, which reports whether claude
// has a credential without calling the model: "yes" or "no", and how. ok is
// false when it printed no such report (another CLI, an older claude).
func claudeAuthStatus(ctx context.Context, eng *engine.Engine, a config.Agent, bin string) (loggedIn string, notes []string, ok bool) {
	privateHome := a.Home != config.HomeInherit
	text, err := eng.Probe(ctx, a, []string{bin, "auth", "status"}, 16<<10)
	out := []byte(text)
	start := bytes.IndexByte(out, '{')
	if err != nil || start < 0 {
		return "", nil, false
	}
	var st struct {
		LoggedIn     *bool  `json:"loggedIn"`
		AuthMethod   string `json:"authMethod"`
		APIKeySource string `json:"apiKeySource"`
	}
	if json.NewDecoder(bytes.NewReader(out[start:])).Decode(&st) != nil || st.LoggedIn == nil {
		return "", nil, false
	}
	if !*st.LoggedIn {
		note := "claude auth status: not logged in; set ANTHROPIC_API_KEY"
		if privateHome {
			note += " (the session gets a private HOME, so your own login is not used: set home: inherit to use it)"
		} else {
			note += ", or log in with `claude /login`"
		}
		return "no", []string{note}, true
	}
	how := "claude auth status: " + st.AuthMethod
	if st.APIKeySource != "" {
		how += " from " + st.APIKeySource
	}
	return "yes", []string{how}, true
}

// versionOf runs BINARY --version in a session with a throwaway HOME (the
// CLIs write to HOME even for --version) and returns the version it prints.
func versionOf(ctx context.Context, eng *engine.Engine, a config.Agent, bin string) string {
	a.Home, a.HomeFiles = config.HomePrivate, nil
	out, err := eng.Probe(ctx, a, []string{bin, "--version"}, 4096)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	if m := versionRe.FindString(out); m != "" {
		return m
	}
	return firstLine(out)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// problemPrefix marks a note of loginState's that is a problem.
const problemPrefix = "problem: "

// loginState guesses, without a model call, whether the preset's CLI will
// find credentials: an API key in the session's environment, or (with the
// user's own HOME) the CLI's credential file.
func loginState(a config.Agent, env []string) (string, []string) {
	home := ""
	if a.Home == config.HomeInherit {
		home, _ = os.UserHomeDir()
	}
	has := func(keys ...string) string {
		for _, k := range keys {
			if envValue(env, k) != "" {
				return k
			}
		}
		return ""
	}
	exists := func(rel string) bool {
		if home == "" {
			return false
		}
		_, err := os.Stat(filepath.Join(home, rel))
		return err == nil
	}
	private := "the session gets a private HOME, so your own login is not used (set home: inherit to use it)"
	switch a.Preset {
	case "claude":
		if k := has("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"); k != "" {
			return "yes", []string{k + " is set"}
		}
		if exists(".claude/.credentials.json") || exists(".claude.json") {
			return "yes", []string{"credentials in ~/.claude"}
		}
		if home == "" {
			return "no", []string{"ANTHROPIC_API_KEY is not set", private}
		}
		return "unknown", []string{"no ANTHROPIC_API_KEY and no ~/.claude/.credentials.json (a login in the system keychain cannot be seen)"}
	case "codex":
		p, k, err := codexProvider(a, env, home)
		if err != nil {
			return "unknown", []string{problemPrefix + "codex cannot load its config, so it will not start: " + err.Error()}
		}
		if k != "" {
			// A provider of the user's own (a gateway, Azure) names the
			// variable holding its key.
			if envValue(env, k) != "" {
				return "yes", []string{k + " is set (model provider " + p + ")"}
			}
			return "no", []string{k + " is not set, and model provider " + p + " reads its key from it"}
		}
		if k := has("OPENAI_API_KEY", "CODEX_API_KEY"); k != "" {
			return "yes", []string{k + " is set"}
		}
		if ch := envValue(env, "CODEX_HOME"); ch != "" {
			if _, err := os.Stat(filepath.Join(ch, "auth.json")); err == nil {
				return "yes", []string{"auth.json in CODEX_HOME"}
			}
		}
		if exists(".codex/auth.json") {
			return "yes", []string{"~/.codex/auth.json"}
		}
		if home == "" {
			return "no", []string{"OPENAI_API_KEY is not set", private}
		}
		return "no", []string{"no OPENAI_API_KEY and no ~/.codex/auth.json: run `codex login`"}
	case "gemini":
		if k := has("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"); k != "" {
			return "yes", []string{k + " is set"}
		}
		if exists(".gemini/oauth_creds.json") {
			return "yes", []string{"~/.gemini/oauth_creds.json"}
		}
		if home == "" {
			return "no", []string{"GEMINI_API_KEY is not set", private}
		}
		return "no", []string{"no GEMINI_API_KEY and no ~/.gemini/oauth_creds.json: run gemini once to log in"}
	}
	return "n/a", nil
}
