package doctor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/walkie-sh/walkie/config"
)

// codexSettings is what doctor reads of codex's config.toml; codex has
// many more keys, which are left alone.
type codexSettings struct {
	ModelProvider  string `toml:"model_provider"`
	ModelProviders map[string]struct {
		EnvKey string `toml:"env_key"` // the variable holding the provider's key
	} `toml:"model_providers"`
}

// codexProvider reads the config.toml the session's codex will load (from
// CODEX_HOME, else the HOME it gets: the agent's home_files or your own)
// for a model_provider other than the built-in openai, and returns it
// with the env_key its table names. A file that is not valid TOML, or
// holds a value of the wrong type, is an error naming it and the line:
// codex refuses to start with it.
func codexProvider(a config.Agent, env []string, home string) (provider, key string, err error) {
	name, text, err := config.CodexConfigFile(a, envValue(env, "CODEX_HOME"), home)
	if err != nil {
		return "", "", err
	}
	var s codexSettings
	if err := toml.Unmarshal(text, &s); err != nil {
		if de, ok := errors.AsType[*toml.DecodeError](err); ok {
			line, col := de.Position()
			return "", "", fmt.Errorf("%s:%d:%d: %s", name, line, col, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return "", "", fmt.Errorf("%s: %w", name, err)
	}
	if s.ModelProvider == "" || s.ModelProvider == "openai" {
		return "", "", nil
	}
	return s.ModelProvider, s.ModelProviders[s.ModelProvider].EnvKey, nil
}
