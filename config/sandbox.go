package config

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Sandbox levels (sandbox:), as session.SandboxLevel spells them.
const (
	SandboxAuto     = "auto"     // what the system supports; says once per run what it could not
	SandboxRequired = "required" // refuse to start an agent without the whole boundary (exit 2)
	SandboxOff      = "off"      // no boundary
)

// SandboxLevels lists the levels in the order docs list them.
var SandboxLevels = []string{SandboxAuto, SandboxRequired, SandboxOff}

// SandboxRoles are the roles with a boundary of their own
// (docs/sessions.md), the keys of the sandbox: section, in the order docs
// list them: every role of Roles, and the grader and the version probe,
// which run no agent's turn.
var SandboxRoles = []string{RoleDebater, RoleImplementer, RoleReviewer, RoleGrader, RolePhase, RoleDistiller, RoleProbe}

// Key proxy modes (key_proxy:).
const (
	KeyProxyAuto = "auto" // on in walkie review and when CI is set
	KeyProxyOn   = "on"
	KeyProxyOff  = "off"
)

// KeyProxyModes lists the modes in the order docs list them.
var KeyProxyModes = []string{KeyProxyAuto, KeyProxyOn, KeyProxyOff}

// Sandboxing is a sandbox level and where it was set: the line a message
// about it points at.
type Sandboxing struct {
	Level string
	// At is "FILE:LINE: KEY" of the setting; "" for the built-in default.
	At string
	// Own: set under the agent itself, not inherited from defaults:.
	Own bool
}

// Boundary is how an agent's sessions are fenced in: what defaults: sets
// for every agent, and an agent's own keys override (sandbox_read and
// sandbox_write add to the defaults').
type Boundary struct {
	Sandbox Sandboxing
	// SandboxRead and SandboxWrite are more paths its sessions may read,
	// or also write: relative to the session's working directory,
	// placeholders and a leading ~/ allowed.
	SandboxRead, SandboxWrite []string
	// KeyProxy is KeyProxyAuto, KeyProxyOn or KeyProxyOff.
	KeyProxy string
}

func defaultBoundary() Boundary {
	return Boundary{Sandbox: Sandboxing{Level: SandboxAuto}, KeyProxy: KeyProxyAuto}
}

// SandboxFor is the sandbox level of agent a's sessions in role: required
// if either the agent or the role (sandbox: in the file) says so, since
// someone demanded the boundary; else the agent's own setting, else the
// role's, else defaults.sandbox (auto unless set).
func (c *Config) SandboxFor(a Agent, role string) Sandboxing {
	if a.Sandbox.Level == "" {
		// An agent made in code, not by the file (the grader): defaults.
		a.Sandbox = c.Defaults.Sandbox
	}
	r, hasRole := c.Sandbox[role]
	switch {
	case a.Sandbox.Level == SandboxRequired:
		return a.Sandbox
	case hasRole && r.Level == SandboxRequired:
		return r
	case a.Sandbox.Own:
		return a.Sandbox
	case hasRole:
		return r
	}
	return a.Sandbox
}

// Where says where the setting was made, for a message: FILE:LINE: KEY,
// or the built-in default.
func (s Sandboxing) Where() string {
	return cmp.Or(s.At, "the built-in default (sandbox: auto)")
}

// SandboxPaths returns the agent's sandbox_read and sandbox_write paths
// with placeholders substituted, $NAME and ${NAME} taken from walkie's
// environment, and a leading ~/ made the user's HOME.
func (a Agent) SandboxPaths(v Vars) (read, write []string, err error) {
	exp := func(key string, in []string) ([]string, error) {
		out := make([]string, 0, len(in))
		for i, p := range in {
			s, err := a.expand(p, v)
			if err != nil {
				return nil, fmt.Errorf("config: agent %q: %s[%d]: %w", a.Name, key, i, err)
			}
			s = os.ExpandEnv(s)
			if rest, ok := strings.CutPrefix(s, "~/"); ok {
				home, err := os.UserHomeDir()
				if err != nil {
					return nil, fmt.Errorf("config: agent %q: %s[%d]: %w", a.Name, key, i, err)
				}
				s = filepath.Join(home, rest)
			}
			out = append(out, s)
		}
		return out, nil
	}
	if read, err = exp("sandbox_read", a.SandboxRead); err != nil {
		return nil, nil, err
	}
	write, err = exp("sandbox_write", a.SandboxWrite)
	return read, write, err
}

// KeyProxied reports whether agent a's API keys go through walkie's
// credential proxy: on, or auto where auto means on (walkie review, or
// under CI: the caller decides).
func (a Agent) KeyProxied(auto bool) bool {
	switch a.KeyProxy {
	case KeyProxyOn:
		return true
	case KeyProxyOff:
		return false
	}
	return auto
}

// SecretVars are the variables of walkie's environment a session that
// gets the whole of it (the grader) must not: the presets' API keys, the
// CI's tokens, the notifier's bot token.
func SecretVars(c *Config) []string {
	out := []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
		"GOOGLE_CLOUD_ACCESS_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
		// The key the controller signs verdicts with for the merge gate
		// (gitrepo/sshsig.KeyVar): code under test must not sign one.
		"WALKIE_SIGNING_KEY"}
	if c != nil && c.Notify.Telegram.TokenEnv != "" {
		out = append(out, c.Notify.Telegram.TokenEnv)
	}
	return out
}

// sandboxLevel stores a level with where it was set; own marks an
// agent's own key.
func sandboxLevel(dst *Sandboxing, own bool) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		var level string
		errs := len(d.errs)
		oneOf(SandboxLevels, &level)(d, v, p)
		if len(d.errs) > errs || level == "" {
			return
		}
		*dst = Sandboxing{Level: level, At: fmt.Sprintf("%s:%d: %s", cmp.Or(d.file, "(built-in)"), v.Line, p), Own: own}
	}
}

// sandboxRoleFields are the keys of the sandbox: section: a level per
// role, over the agents' own unless they say required (SandboxFor).
func sandboxRoleFields(roles map[string]Sandboxing) fields {
	var fs fields
	for _, role := range SandboxRoles {
		fs = append(fs, field{role, func(d *decoder, v *yaml.Node, p string) {
			var s Sandboxing
			sandboxLevel(&s, false)(d, v, p)
			if s.Level != "" {
				roles[role] = s
			}
		}})
	}
	return fs
}

// sandboxPaths adds a list of paths to *dst, each with known
// placeholders.
func sandboxPaths(dst *[]string) decodeFunc {
	return func(d *decoder, v *yaml.Node, p string) {
		if l, ok := d.list(v, p, hasKnownPlaceholders); ok {
			*dst = union(*dst, l)
		}
	}
}

// UnderSandbox is argv as agent a's CLI runs inside walkie's own sandbox.
// codex confines its tools with a sandbox of its own (bubblewrap on
// Linux, Seatbelt on macOS) that cannot run inside another: bubblewrap
// needs mounts, which Landlock denies, and Seatbelt profiles do not nest.
// So its -s (--sandbox) becomes danger-full-access, and walkie's boundary,
// narrower than codex's workspace-write (docs/agents.md), confines it.
// Other CLIs' argv is returned as it is.
func (a Agent) UnderSandbox(argv []string) []string {
	if a.Preset != "codex" {
		return argv
	}
	out := slices.Clone(argv)
	for i, arg := range out {
		switch {
		case (arg == "-s" || arg == "--sandbox") && i+1 < len(out):
			out[i+1] = codexNoSandbox
		case strings.HasPrefix(arg, "--sandbox="):
			out[i] = "--sandbox=" + codexNoSandbox
		}
	}
	return out
}

// codexNoSandbox is codex's sandbox mode that leaves its tools to the
// sandbox around it.
const codexNoSandbox = "danger-full-access"
