package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// Provenance is what produced an attempt, as its record in the log says
// it: enough to tell, later, which CLI at which version ran which model
// with which command and prompt.
type Provenance struct {
	// Argv is the command as run, the prompt replaced by "{prompt}" (its
	// hash is PromptSHA256) and secrets by Redacted.
	Argv         []string `json:"argv,omitempty"`
	PromptSHA256 string   `json:"prompt_sha256,omitempty"`
	PromptBytes  int      `json:"prompt_bytes,omitempty"`
	// CLIVersion is the first line the CLI printed for --version, asked
	// once per engine (one walkie auto or turn, one daemon); presets
	// only, since an arbitrary command may not take --version.
	CLIVersion string `json:"cli_version,omitempty"`
	// Model is the model configured for the agent, else the one its
	// output names; Effort the configured reasoning effort.
	Model  string `json:"model,omitempty"`
	Effort string `json:"effort,omitempty"`
	// KeysProxied: the session held stand-ins, its CLI's API keys stayed
	// in walkie's credential proxy.
	KeysProxied bool `json:"keys_proxied,omitempty"`
}

// Redacted replaces a secret in a recorded command.
const Redacted = "REDACTED"

var (
	// secretName is a flag or key whose value is a secret.
	secretName = regexp.MustCompile(`(?i)(key|token|secret|passw(or)?d|credential|auth|bearer|cookie|session[-_]?id)`)
	// secretShape is a value shaped like a vendor's key, wherever it is.
	secretShape = regexp.MustCompile(`\b(sk-[A-Za-z0-9_-]{16,}|sk-ant-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})`)
	// keyValue is NAME=VALUE or NAME:VALUE inside one argument.
	keyValue = regexp.MustCompile(`^(-{0,2}[A-Za-z0-9_.\-]+)([=:]\s*)(.+)$`)
	// bearerValue is the credential after an HTTP auth scheme.
	bearerValue = regexp.MustCompile(`(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}`)
)

// RecordedArgv is argv as an attempt's record keeps it: prompt, an element
// holding it, replaced by "{prompt}"; the value after a flag named like a
// secret (--api-key X), the value of NAME=VALUE whose name is (-c
// api_key=X, --token=X), an HTTP credential (Authorization: Bearer X),
// anything shaped like a vendor's key, and every one of secrets (the
// session's own environment values) replaced by Redacted.
func RecordedArgv(argv []string, prompt string, secrets []string) []string {
	out := make([]string, len(argv))
	redactNext := false
	for i, a := range argv {
		if prompt != "" {
			a = strings.ReplaceAll(a, prompt, "{prompt}")
		}
		switch {
		case redactNext && !strings.HasPrefix(a, "-"):
			a = Redacted
			redactNext = false
		default:
			redactNext = false
			if m := keyValue.FindStringSubmatch(a); m != nil && secretName.MatchString(m[1]) && m[3] != "{prompt}" {
				a = m[1] + m[2] + Redacted
			} else if strings.HasPrefix(a, "-") && !strings.ContainsAny(a, "=: ") && secretName.MatchString(a) {
				redactNext = true
			}
		}
		a = bearerValue.ReplaceAllString(a, "${1} "+Redacted)
		a = secretShape.ReplaceAllString(a, Redacted)
		for _, s := range secrets {
			if len(s) >= 8 {
				a = strings.ReplaceAll(a, s, Redacted)
			}
		}
		out[i] = a
	}
	return out
}

// secretValues are the values of env entries ("K=V") whose names say they
// hold a secret.
func secretValues(env []string) []string {
	var out []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && v != "" && secretName.MatchString(k) {
			out = append(out, v)
		}
	}
	return out
}

// PromptHash is the hex sha256 of a prompt, as recorded.
func PromptHash(prompt string) string {
	if prompt == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(prompt))
	return hex.EncodeToString(sum[:])
}

// versions remembers each CLI's version for the engine's life.
type versions struct {
	mu sync.Mutex
	m  map[string]*versionProbe
}

type versionProbe struct {
	done chan struct{}
	val  string
}

// versionLimit bounds what is kept of a --version answer.
const versionLimit = 4 << 10

// version starts asking a's CLI for its version, once per engine and
// program, and returns a function that waits for the answer ("" when it
// cannot be told). Only presets are asked: an arbitrary command may do
// something else entirely with --version.
func (e *Engine) version(ctx context.Context, a config.Agent, argv0 string) func() string {
	if a.Preset == "" || argv0 == "" {
		return func() string { return "" }
	}
	key := a.Name + "\x00" + argv0
	e.vers.mu.Lock()
	if e.vers.m == nil {
		e.vers.m = map[string]*versionProbe{}
	}
	p, asked := e.vers.m[key]
	if !asked {
		p = &versionProbe{done: make(chan struct{})}
		e.vers.m[key] = p
	}
	e.vers.mu.Unlock()
	if !asked {
		go func() {
			defer close(p.done)
			out, err := e.Probe(ctx, a, []string{argv0, "--version"}, versionLimit)
			if err == nil {
				p.val = firstLine(out)
			}
		}()
	}
	return func() string {
		<-p.done
		return p.val
	}
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(strings.ToLower(l), "warning") {
			return walkie.Clip(l, 80)
		}
	}
	return ""
}
