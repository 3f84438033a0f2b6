package doctor

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
	if p, k, err := codexProvider(config.Agent{Preset: "codex", Home: config.HomePrivate}, nil, ""); p != "" || k != "" || err != nil {
		t.Errorf("no config: %q %q %v", p, k, err)
	}
}

// codex's config.toml is TOML, not lines of key = value: comments, quoted
// table names, dotted keys and inline tables all name the same provider,
// and a provider under a profile or commented out is not the one in use.
func TestDoctorCodexConfigTOML(t *testing.T) {
	tests := []struct {
		name, toml    string
		provider, key string
	}{
		{"comments", "# my gateway\nmodel_provider = \"gw\" # the one in use\n\n[model_providers.gw] # its table\nname = \"gateway\"\nenv_key = \"GW_KEY\" # holds the key\n", "gw", "GW_KEY"},
		{"commented out", "# model_provider = \"old\"\nmodel_provider = \"gw\"\n# [model_providers.gw]\n# env_key = \"OLD_KEY\"\n[model_providers.gw]\nenv_key = \"GW_KEY\"\n", "gw", "GW_KEY"},
		{"quoted table name", "model_provider = \"my-fake\"\n[model_providers.\"my-fake\"]\nenv_key = \"FAKE_KEY\"\n", "my-fake", "FAKE_KEY"},
		{"quoted name with a dot", "model_provider = \"a.b\"\n[model_providers.\"a.b\"]\nenv_key = \"AB_KEY\"\n[model_providers.a]\nenv_key = \"A_KEY\"\n", "a.b", "AB_KEY"},
		{"literal strings", "model_provider = 'gw'\n[model_providers.'gw']\nenv_key = 'GW_KEY'\n", "gw", "GW_KEY"},
		{"inline table", "model_provider = \"gw\"\nmodel_providers = { gw = { name = \"gateway\", env_key = \"GW_KEY\" } }\n", "gw", "GW_KEY"},
		{"dotted keys", "model_provider = \"gw\"\nmodel_providers.gw.env_key = \"GW_KEY\"\n", "gw", "GW_KEY"},
		{"table before the key", "[model_providers.gw]\nenv_key = \"GW_KEY\"\n", "", ""},
		{"profile's provider", "[profiles.fast]\nmodel_provider = \"gw\"\n[model_providers.gw]\nenv_key = \"GW_KEY\"\n", "", ""},
		{"provider without env_key", "model_provider = \"local\"\n[model_providers.local]\nbase_url = \"http://127.0.0.1:1/v1\"\n", "local", ""},
		{"built-in provider", "model_provider = \"openai\"\n", "", ""},
		{"other keys and types", "model = \"m\"\napproval_policy = \"never\"\n[sandbox_workspace_write]\nnetwork_access = true\nwritable_roots = [\"/x\"]\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := config.Agent{Name: "codex", Preset: "codex", Home: config.HomePrivate, HomeFiles: map[string]string{".codex/config.toml": tt.toml}}
			p, k, err := codexProvider(a, nil, "")
			if err != nil || p != tt.provider || k != tt.key {
				t.Errorf("got %q %q %v, want %q %q", p, k, err, tt.provider, tt.key)
			}
		})
	}
}

// A config.toml codex cannot load stops codex from starting, so doctor
// says which file and which line, wherever the file comes from.
func TestDoctorCodexConfigBroken(t *testing.T) {
	tests := []struct {
		name, toml, want string
	}{
		{"unclosed table", "model_provider = \"gw\"\n[model_providers.gw\nenv_key = \"K\"\n", ":2:20: expected ']' to close table name"},
		{"wrong type", "# a comment\nmodel_provider = 5\n", ":2:18: cannot decode TOML integer"},
		{"table as a string", "model_providers = \"gw\"\n", ":1:19: cannot decode TOML string"},
		{"key twice", "model_provider = \"a\"\nmodel_provider = \"b\"\n", ":2:1: key model_provider is already defined"},
		{"unterminated string", "model_provider = \"gw\n", ":1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			private := config.Agent{Name: "gw", Preset: "codex", Home: config.HomePrivate, HomeFiles: map[string]string{".codex/config.toml": tt.toml}}
			_, _, err := codexProvider(private, nil, "")
			if want := "agents.gw.home_files[.codex/config.toml]" + tt.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("home_files: error %v, want it to start %q", err, want)
			}

			ch := t.TempDir()
			path := filepath.Join(ch, "config.toml")
			if err := os.WriteFile(path, []byte(tt.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err = codexProvider(private, []string{"CODEX_HOME=" + ch}, "")
			if want := path + tt.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("CODEX_HOME: error %v, want it to start %q", err, want)
			}

			// With the key set, the login cannot be told; the file stops
			// codex, and says so as a problem of its own.
			got, notes := loginState(private, []string{"CODEX_HOME=" + ch, "OPENAI_API_KEY=k"})
			if got != "unknown" || len(notes) != 1 || !strings.HasPrefix(notes[0], problemPrefix) || !strings.Contains(notes[0], "will not start: "+path+tt.want) {
				t.Errorf("loginState = %s %q", got, notes)
			}
		})
	}
}

// A config.toml that is missing is codex's defaults, not a problem; one
// that cannot be read is.
func TestDoctorCodexConfigFile(t *testing.T) {
	inherit := config.Agent{Name: "codex", Preset: "codex", Home: config.HomeInherit}
	if p, k, err := codexProvider(inherit, nil, t.TempDir()); p != "" || k != "" || err != nil {
		t.Errorf("missing file: %q %q %v", p, k, err)
	}
	home := t.TempDir()
	path := filepath.Join(home, ".codex", "config.toml")
	if err := os.MkdirAll(path, 0o700); err != nil { // a directory where the file should be
		t.Fatal(err)
	}
	if _, _, err := codexProvider(inherit, nil, home); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("unreadable file: error %v, want one naming %s", err, path)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("model_provider = \"gw\"\n[model_providers.gw]\nenv_key = \"GW_KEY\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, k, err := codexProvider(inherit, nil, home); p != "gw" || k != "GW_KEY" || err != nil {
		t.Errorf("your own ~/.codex: %q %q %v", p, k, err)
	}
}

// FuzzCodexProvider: no config.toml panics doctor, and every one codex
// cannot load is reported with the entry's name and a line and column.
func FuzzCodexProvider(f *testing.F) {
	for _, s := range []string{
		"", "model_provider = \"gw\"\n[model_providers.gw]\nenv_key = \"K\"\n", "[model_providers.\"a.b\"]\n",
		"model_providers = { gw = { env_key = \"K\" } }\n", "[model_providers.gw\n", "model_provider = 5\n", "a = 1\na = 2\n",
	} {
		f.Add(s)
	}
	where := regexp.MustCompile(`^agents\.f\.home_files\[\.codex/config\.toml\]:[1-9][0-9]*:[1-9][0-9]*: `)
	f.Fuzz(func(t *testing.T, text string) {
		a := config.Agent{Name: "f", Preset: "codex", Home: config.HomePrivate, HomeFiles: map[string]string{".codex/config.toml": text}}
		p, k, err := codexProvider(a, nil, "")
		if err != nil && !where.MatchString(err.Error()) {
			t.Fatalf("error %q does not say where", err)
		}
		if err == nil && p == "" && k != "" {
			t.Fatalf("a key %q without a provider", k)
		}
	})
}
