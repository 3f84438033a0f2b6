package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/config"
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
}

// CanRun reports whether nothing found stops the agent from taking a turn.
func (a AgentCheck) CanRun() bool { return len(a.Problems) == 0 }

// Doctor checks each named agent: is its binary there, which version, does
// it appear logged in (from its environment and credential files, without
// spending tokens), and is its configuration sound.
func Doctor(ctx context.Context, cfg *config.Config, names []string, inUse map[string]bool) []AgentCheck {
	var out []AgentCheck
	for _, n := range names {
		out = append(out, doctorOne(ctx, cfg, n, inUse[n]))
	}
	return out
}

func doctorOne(ctx context.Context, cfg *config.Config, name string, inUse bool) AgentCheck {
	ck := AgentCheck{Name: name, InUse: inUse, LoggedIn: "n/a"}
	a, err := cfg.Agent(name)
	if err != nil {
		ck.Problems = append(ck.Problems, err.Error())
		return ck
	}
	ck.Preset = a.Preset
	v := config.Vars{Prompt: "doctor", File: "doctor.walkie.md", Agent: name, Dir: ".", Turn: 1, Round: 1}
	argv, err := a.Argv(v)
	if err == nil && len(argv) == 0 {
		err = fmt.Errorf("the command is empty")
	}
	if err != nil {
		ck.Problems = append(ck.Problems, "command: "+err.Error())
		return ck
	}
	env, err := a.Environ(os.Environ(), v)
	if err != nil {
		ck.Problems = append(ck.Problems, "environment: "+err.Error())
		return ck
	}
	if _, err := sessionRules(a.Rules); err != nil {
		ck.Problems = append(ck.Problems, err.Error())
	}
	bin, err := lookPath(argv[0], envValue(env, "PATH"))
	if err != nil {
		ck.Problems = append(ck.Problems, err.Error())
		return ck
	}
	ck.Binary = bin
	if a.Preset != "" {
		ck.Version = versionOf(ctx, bin, env)
		ck.LoggedIn, ck.Notes = loginState(a, env)
		if a.Preset == "claude" {
			// claude can say itself, without a model call: a login in
			// the system keychain or a cloud provider's credentials too.
			if yes, notes, ok := claudeAuthStatus(ctx, bin, env, a.Home != config.HomeInherit); ok {
				ck.LoggedIn, ck.Notes = yes, notes
			}
		}
		if ck.LoggedIn == "no" {
			ck.Problems = append(ck.Problems, "does not appear logged in: "+strings.Join(ck.Notes, "; "))
			ck.Notes = nil
		}
	}
	return ck
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

func lookPath(cmd, path string) (string, error) {
	if strings.Contains(cmd, "/") {
		if fi, err := os.Stat(cmd); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s is not an executable file", cmd)
		}
		return cmd, nil
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, cmd)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH (%s)", cmd, path)
}

var versionRe = regexp.MustCompile(`\d+\.\d+\.\d+\S*`)

// claudeAuthStatus runs BINARY auth status, which reports whether claude
// has a credential without calling the model: "yes" or "no", and how. ok is
// false when it printed no such report (another CLI, an older claude).
func claudeAuthStatus(ctx context.Context, bin string, env []string, privateHome bool) (loggedIn string, notes []string, ok bool) {
	var out []byte
	var plain session.PlainText
	_, err := session.Run(ctx, session.Spec{Argv: []string{bin, "auth", "status"}, Env: env, PrivateHome: privateHome,
		Timeout: 20 * time.Second, Grace: time.Second,
		Observer: func(b []byte) {
			if len(out) < 16<<10 {
				out = plain.Append(out, b)
			}
		}})
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
func versionOf(ctx context.Context, bin string, env []string) string {
	var out []byte
	var plain session.PlainText
	_, err := session.Run(ctx, session.Spec{Argv: []string{bin, "--version"}, Env: env, PrivateHome: true,
		Timeout: 20 * time.Second, Grace: time.Second,
		Observer: func(b []byte) {
			if len(out) < 4096 {
				out = plain.Append(out, b)
			}
		}})
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	if m := versionRe.Find(out); m != nil {
		return string(m)
	}
	return firstLine(string(out))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

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
			return "no", []string{"codex cannot load its config, so it will not start: " + err.Error()}
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
