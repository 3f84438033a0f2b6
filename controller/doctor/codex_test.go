package doctor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/walkie-sh/walkie/config"
)

// codex with a model provider of one's own reads its key from the variable
// the provider's table names, not OPENAI_API_KEY.
func TestDoctorCodexProvider(t *testing.T) {
	toml := "model = \"m\"\nmodel_provider = \"gw\"\n\n[model_providers.gw]\nname = \"gateway\"\nbase_url = \"http://127.0.0.1:1/v1\"\nenv_key = \"GW_KEY\"\n"
	private := config.Agent{Preset: "codex", Home: config.HomePrivate, HomeFiles: map[string]string{".codex/config.toml": toml}}
	if got, notes := loginState(private, []string{"GW_KEY=k"}); got != "yes" {
		t.Errorf("key set: %s %v", got, notes)
	}
	if got, notes := loginState(private, []string{"OPENAI_API_KEY=k"}); got != "no" || len(notes) == 0 || notes[0] != "GW_KEY is not set, and model provider gw reads its key from it" {
		t.Errorf("key unset: %s %v", got, notes)
	}
	// CODEX_HOME wins over the HOME's config.
	ch := t.TempDir()
	if err := os.WriteFile(filepath.Join(ch, "config.toml"), []byte("model_provider = \"openai\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := loginState(private, []string{"CODEX_HOME=" + ch, "OPENAI_API_KEY=k"}); got != "yes" {
		t.Errorf("built-in provider in CODEX_HOME: %s", got)
	}
	// Without a provider of its own, the built-in one's variables count.
	if p, k := codexProvider(config.Agent{Preset: "codex", Home: config.HomePrivate}, nil, ""); p != "" || k != "" {
		t.Errorf("no config: %q %q", p, k)
	}
}
