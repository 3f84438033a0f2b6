package modelserver

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The helpers below point each real CLI at a Server through the CLI's own
// supported settings (environment, config files in a private HOME), never by
// patching it. Each returns environment entries, "KEY=value", to append to
// the child's environment; later entries win in os/exec, so appending them
// after os.Environ() overrides the user's own keys. All three also switch the
// CLI's retries off, so a scripted 5xx fails in about a second instead of
// after minutes of back-off; a test that wants retries overrides them.

// FakeAPIKey is the credential every helper hands the CLIs; the server
// accepts anything.
const FakeAPIKey = "fakemodel-key"

// CodexModel and GeminiModel are the model names the helpers configure.
// codex 0.171.0 knows gpt-5.5's metadata (other names print "Model metadata
// for … not found"). Gemini only skips its routing call (a JSON verdict from
// a small model, asked before each turn) when given -m, so callers pass
// -m GeminiModel.
const (
	CodexModel  = "gpt-5.5"
	GeminiModel = "gemini-2.5-pro"
)

// ClaudeEnv points claude at url: ANTHROPIC_BASE_URL and an API key, with
// nonessential traffic (telemetry, update checks, DNS look-ups) and retries
// off. claude keeps its config in $HOME/.claude and $HOME/.claude.json, so
// give it a private HOME too.
func ClaudeEnv(url string) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_API_KEY=" + FakeAPIKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
	}
}

// WriteCodexHome writes dir/config.toml with a provider "fake" that speaks
// the Responses API at url/v1 (codex refuses to override its built-in
// "openai" provider and ignores OPENAI_BASE_URL), retries off, and returns
// the environment: CODEX_HOME=dir and the provider's key.
func WriteCodexHome(dir, url string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create CODEX_HOME: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by modelserver.WriteCodexHome: codex talks to a fake model server.\n")
	fmt.Fprintf(&b, "model = %s\n", strconv.Quote(CodexModel))
	fmt.Fprintf(&b, "model_provider = \"fake\"\n")
	fmt.Fprintf(&b, "check_for_update_on_startup = false\n")
	fmt.Fprintf(&b, "\n[model_providers.fake]\n")
	fmt.Fprintf(&b, "name = \"fakemodel\"\n")
	fmt.Fprintf(&b, "base_url = %s\n", strconv.Quote(strings.TrimRight(url, "/")+"/v1"))
	fmt.Fprintf(&b, "wire_api = \"responses\"\n")
	fmt.Fprintf(&b, "env_key = \"FAKE_API_KEY\"\n")
	fmt.Fprintf(&b, "request_max_retries = 0\n")
	fmt.Fprintf(&b, "stream_max_retries = 0\n")
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("write codex config: %w", err)
	}
	return []string{
		"CODEX_HOME=" + dir,
		"FAKE_API_KEY=" + FakeAPIKey,
	}, nil
}

// WriteGeminiHome writes home/.gemini/settings.json choosing API-key auth,
// with auto-update, telemetry and usage statistics off and one attempt per
// model call, and returns the environment: HOME=home, GEMINI_API_KEY and
// GOOGLE_GEMINI_BASE_URL=url. gemini still wants --skip-trust (or
// GEMINI_CLI_TRUST_WORKSPACE=true) to run headless in an untrusted folder;
// that is the caller's choice, not this helper's.
func WriteGeminiHome(home, url string) ([]string, error) {
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create gemini settings dir: %w", err)
	}
	settings := obj{
		"security":  obj{"auth": obj{"selectedType": "gemini-api-key"}},
		"general":   obj{"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": 1},
		"privacy":   obj{"usageStatisticsEnabled": false},
		"telemetry": obj{"enabled": false},
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode gemini settings: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), append(b, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("write gemini settings: %w", err)
	}
	return []string{
		"HOME=" + home,
		"GEMINI_API_KEY=" + FakeAPIKey,
		"GOOGLE_GEMINI_BASE_URL=" + strings.TrimRight(url, "/"),
	}, nil
}
