package credproxy

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/walkie-sh/walkie/session"
)

// Change is what Guard does to a session so that its CLI's model calls
// go through the proxy.
type Change struct {
	// Env holds K=V entries over the session's own: the stand-ins in
	// place of the keys, the proxy's base URL in place of the upstream.
	Env []string
	// Argv is the command with what it needs besides (codex takes its
	// provider's base URL as a -c override); nil: unchanged.
	Argv []string
	// Remove closes the session's route; it may be called again.
	Remove func()
	// Note says why nothing was changed, when nothing could be (no key
	// in the environment: a subscription login is the CLI's own).
	Note string
}

// The vendors' defaults, where the environment names no base URL.
const (
	anthropicAPI = "https://api.anthropic.com"
	openaiAPI    = "https://api.openai.com/v1"
	geminiAPI    = "https://generativelanguage.googleapis.com"
)

// Guard points a session of preset's CLI (claude, codex, gemini) at p: argv
// is its command, env the environment it would get (K=V), home reads a
// file of the HOME it would have (relative path; ok false when absent).
// Another preset, or none, is left as it is.
func Guard(p *Proxy, preset string, argv, env []string, home func(rel string) ([]byte, bool)) (Change, error) {
	switch preset {
	case "claude":
		return byEnv(p, env, "ANTHROPIC_BASE_URL", anthropicAPI, []keyVar{
			{"ANTHROPIC_API_KEY", Place{Header: "x-api-key"}},
			{"ANTHROPIC_AUTH_TOKEN", Place{Header: "Authorization", Bearer: true}},
		})
	case "gemini":
		if strings.EqualFold(value(env, "GOOGLE_GENAI_USE_VERTEXAI"), "true") {
			return Change{Remove: func() {}, Note: "gemini on Vertex AI authenticates with Google Cloud credentials, which the key proxy does not hold"}, nil
		}
		pl := Place{Header: "x-goog-api-key", Query: "key"}
		return byEnv(p, env, "GOOGLE_GEMINI_BASE_URL", geminiAPI, []keyVar{{"GEMINI_API_KEY", pl}, {"GOOGLE_API_KEY", pl}})
	case "codex":
		return codex(p, argv, env, home)
	}
	return Change{Remove: func() {}}, nil
}

type keyVar struct {
	name  string
	place Place
}

// byEnv is for a CLI that takes its key and its base URL from the
// environment: each key present gets a stand-in, the base URL the route.
func byEnv(p *Proxy, env []string, baseVar, defaultBase string, keys []keyVar) (Change, error) {
	var creds []Credential
	var names []string
	for _, k := range keys {
		if v := value(env, k.name); v != "" {
			creds = append(creds, Credential{Key: v, Place: k.place})
			names = append(names, k.name)
		}
	}
	if len(creds) == 0 {
		return Change{Remove: func() {}, Note: noKey(keys)}, nil
	}
	base, standins, remove, err := p.Add(cmp.Or(value(env, baseVar), defaultBase), creds...)
	if err != nil {
		return Change{}, err
	}
	ch := Change{Env: []string{baseVar + "=" + base}, Remove: remove}
	for i, n := range names {
		ch.Env = append(ch.Env, n+"="+standins[i])
	}
	return ch, nil
}

func noKey(keys []keyVar) string {
	var names []string
	for _, k := range keys {
		names = append(names, k.name)
	}
	return "no API key in its environment (" + strings.Join(names, ", ") + "): its own login, if any, is the CLI's to read, outside the key proxy"
}

// proxyProvider is the provider walkie defines for codex's built-in
// OpenAI one, whose base URL codex does not let anyone change.
const proxyProvider = "walkie_key_proxy"

// codex takes its model provider from config.toml (in CODEX_HOME, else
// ~/.codex) or -c overrides: a provider's base_url and env_key say where
// calls go and which variable holds the key. The route gets that base
// URL, the session a -c override of it and a stand-in in that variable;
// for the built-in OpenAI provider, a provider of walkie's own in its
// place, with OPENAI_API_KEY (or CODEX_API_KEY).
func codex(p *Proxy, argv, env []string, home func(string) ([]byte, bool)) (Change, error) {
	cfg, err := codexConfig(env, home)
	if err != nil {
		return Change{}, err
	}
	name := cmp.Or(override(argv, "model_provider"), cfg.Provider, "openai")
	bearer := Place{Header: "Authorization", Bearer: true}
	if name == "openai" {
		keys := []keyVar{{"OPENAI_API_KEY", bearer}, {"CODEX_API_KEY", bearer}}
		keyName := ""
		for _, k := range keys {
			if value(env, k.name) != "" {
				keyName = k.name
				break
			}
		}
		if keyName == "" {
			return Change{Remove: func() {}, Note: noKey(keys)}, nil
		}
		base, standins, remove, err := p.Add(openaiAPI, Credential{Key: value(env, keyName), Place: bearer})
		if err != nil {
			return Change{}, err
		}
		pre := "model_providers." + proxyProvider + "."
		return Change{
			Env: []string{keyName + "=" + standins[0]},
			Argv: withOverrides(argv, "model_provider="+strconv.Quote(proxyProvider), pre+"name="+strconv.Quote("OpenAI, through walkie's key proxy"),
				pre+"base_url="+strconv.Quote(base), pre+"env_key="+strconv.Quote(keyName), pre+"wire_api="+strconv.Quote("responses")),
			Remove: remove,
		}, nil
	}
	prov := cfg.Providers[name]
	baseURL := cmp.Or(override(argv, "model_providers."+name+".base_url"), prov.BaseURL)
	keyName := cmp.Or(override(argv, "model_providers."+name+".env_key"), prov.EnvKey)
	if baseURL == "" || keyName == "" || value(env, keyName) == "" {
		return Change{Remove: func() {}, Note: fmt.Sprintf("codex's provider %q names no base_url, no env_key, or a key not in its environment: the key proxy has nothing to hold", name)}, nil
	}
	base, standins, remove, err := p.Add(baseURL, Credential{Key: value(env, keyName), Place: bearer})
	if err != nil {
		return Change{}, err
	}
	return Change{
		Env:    []string{keyName + "=" + standins[0]},
		Argv:   withOverrides(argv, "model_providers."+name+".base_url="+strconv.Quote(base)),
		Remove: remove,
	}, nil
}

// codexSettings are the parts of codex's config.toml the proxy reads.
type codexSettings struct {
	Provider  string `toml:"model_provider"`
	Providers map[string]struct {
		BaseURL string `toml:"base_url"`
		EnvKey  string `toml:"env_key"`
	} `toml:"model_providers"`
}

// codexConfig reads the config.toml the session's codex reads: in
// CODEX_HOME, else in its HOME's .codex. None is no error.
func codexConfig(env []string, home func(string) ([]byte, bool)) (codexSettings, error) {
	var s codexSettings
	var data []byte
	var where string
	if dir := value(env, "CODEX_HOME"); dir != "" {
		where = filepath.Join(dir, "config.toml")
		b, err := os.ReadFile(where)
		if err != nil && !os.IsNotExist(err) {
			return s, fmt.Errorf("credential proxy: %w", err)
		}
		data = b
	} else if b, ok := home(".codex/config.toml"); ok {
		where, data = "~/.codex/config.toml", b
	}
	if err := toml.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("credential proxy: %s: %w", where, err)
	}
	return s, nil
}

// override is the value of a -c KEY=VALUE (or --config) in argv, unquoted
// if it is a TOML string; "" if none.
func override(argv []string, key string) string {
	v := ""
	for i, a := range argv {
		var kv string
		switch {
		case (a == "-c" || a == "--config") && i+1 < len(argv):
			kv = argv[i+1]
		case strings.HasPrefix(a, "--config="):
			kv = strings.TrimPrefix(a, "--config=")
		default:
			continue
		}
		if k, val, ok := strings.Cut(kv, "="); ok && strings.TrimSpace(k) == key {
			v = strings.TrimSpace(val)
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
		}
	}
	return v
}

// withOverrides puts -c KEY=VALUE pairs after codex's subcommand (exec),
// or after the program when it has none, where they cannot be taken for
// the prompt. A later -c of the user's for the same key would win: the
// calls would then go upstream with the stand-in, and fail, never
// carrying the key.
func withOverrides(argv []string, kvs ...string) []string {
	at := 1
	if i := slices.Index(argv, "exec"); i >= 0 {
		at = i + 1
	}
	var add []string
	for _, kv := range kvs {
		add = append(add, "-c", kv)
	}
	return slices.Concat(argv[:min(at, len(argv))], add, argv[min(at, len(argv)):])
}

// value is the last value of key in env.
func value(env []string, key string) string { return session.EnvValue(env, key) }
