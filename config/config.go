// Package config owns walkie's YAML configuration: where it is found, how it
// is validated, the built-in agent presets for claude, codex and gemini, the
// pinned prompt templates, the dated pricing table, and the daemon's limits
// and notification sinks.
//
// Every error names the file, the line and the key, because a person reads
// it while holding the file open. Of the project it imports only walkie,
// for the outcomes a rule may end a session with; the engine converts
// these types into what the session package needs.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// FileName is the project-local config file looked up in the current directory.
const FileName = "walkie.yaml"

// Config is a loaded, validated configuration. The zero value is not useful;
// use Load, Parse or Default.
type Config struct {
	Path     string           // where it was loaded from ("" = built-in defaults only)
	Defaults AgentDefaults    // applied to every agent before its own keys
	Agents   map[string]Agent // user-defined agents plus the presets, resolved
	Prompts  Prompts          // prompt templates by name (text/template sources)
	// Roundtable holds the round table's templates (roundtable_prompts:).
	Roundtable RoundtablePrompts
	Pricing    Pricing // dated price table for token-priced usage
	Limits     Limits  // daemon limits
	Notify     Notify  // notification sinks
	Serve      Serve   // walkie serve's HTTP surface
	BudgetUSD  float64 // default per-debate budget in USD; 0 = no budget
	// Sandbox holds the sandbox: section's level per role (SandboxRoles);
	// a role it does not name follows its agents (SandboxFor).
	Sandbox map[string]Sandboxing
	// ProxyKeys makes key_proxy: auto mean on for this run, as it does
	// under CI: walkie review sets it. It is no key of the file.
	ProxyKeys bool
	// People are the persons who may play participants on this machine
	// (people:), by name, with how to reach them.
	People map[string]Person
}

// Person is one entry of people:: a participant walkie never runs, but
// waits for, and who may act on debates from Telegram.
type Person struct {
	// Telegram is the person's chat id with the bot ("" for none): the
	// allow-list of notify.telegram's updates. A message from any other
	// chat is ignored.
	Telegram string
}

// Timing is how long an agent's session may take, how it is ended, and
// how often a failed turn is retried: what defaults: sets for every agent
// and an agent's own keys override key by key. One table (sharedFields)
// declares these keys for both.
type Timing struct {
	Timeout   time.Duration // hard limit for one turn
	Stall     time.Duration // no output and no file change for this long = stalled; 0 disables
	Grace     time.Duration // quiet time after a valid turn is on disk before the session is ended
	KillGrace time.Duration // time between SIGTERM and SIGKILL to the process group
	Retries   int           // retries of a retryable outcome before the debate fails
	Debounce  time.Duration // watch --once: wait this long after the last entry before invoking
	// TranscriptCap bounds each transcript file of a session, in bytes:
	// the head and the tail are kept, with a line saying what was cut;
	// 0 = no cap.
	TranscriptCap int64
}

// AgentDefaults are the settings every agent starts from.
type AgentDefaults struct {
	Timing
	EnvAllow []string // parent variables every agent gets (DefaultEnvAllow plus the config's)
	Home     string   // HomePrivate or HomeInherit, for agents that do not say
	Boundary          // the sandbox and the key proxy, for agents that do not say
}

// Agent is one resolved participant: a command and how to run it.
type Agent struct {
	Name      string
	Preset    string            // "claude" | "codex" | "gemini" | ""
	Mode      string            // a preset's ModeWrite or ModeReadOnly; "" without a preset
	Command   []string          // argv; placeholders {prompt} {file} {agent} {turn} {round} {dir} {model} {effort}
	Env       map[string]string // set in the session's environment (values may hold placeholders)
	EnvAllow  []string          // parent variables passed through; a trailing * matches a prefix
	Dir       string            // working directory, placeholders allowed; default "{dir}"
	Home      string            // HomePrivate (default) or HomeInherit
	HomeFiles map[string]string // files written into a private HOME before start (path relative to HOME → content)
	TmpDir    string            // TmpDirPrivate or TmpDirInherit (default)
	Workspace string            // WorkspaceLive (default) or WorkspaceWorktree
	Timing                      // the defaults', overridden by the agent's own keys
	Boundary                    // the defaults', overridden by the agent's own keys
	Rules     []Rule            // screen rules, checked in order against the session's output
	Usage     string            // UsageClaudeJSON | UsageCodexJSONL | UsageGeminiJSON | UsageNone
	Model     string            // model name for pricing lookups and the {model} placeholder; a preset passes it to its CLI
	Effort    string            // reasoning effort for the {effort} placeholder; a preset passes it to its CLI (Efforts)
	Prompt    string            // name of the prompt template; default "turn"
	// Tools are the tools a preset's CLI offers the model in each role
	// (Roles), by the CLI's names; a role set to nil gets the CLI's whole
	// set. Nil for an agent with a command of its own (ForRole).
	Tools map[string][]string
	// Instructions, set by ForRole for a role whose preset replaces its
	// CLI's own model instructions (RoleInstructions), is the text the
	// session's instructions file holds; the engine writes the file and
	// passes it (WithInstructionsFile). "" leaves the CLI's own.
	Instructions string
}

// Workspace modes: where an agent's unattended debate turns run.
const (
	WorkspaceLive     = "live"     // in its dir: (the live checkout)
	WorkspaceWorktree = "worktree" // in a git worktree of its own, made for the session and removed after
)

// Home modes.
const (
	HomePrivate = "private" // a fresh throwaway HOME per session
	HomeInherit = "inherit" // the controller's own HOME
)

// Usage parsers.
const (
	UsageClaudeJSON = "claude-json"
	UsageCodexJSONL = "codex-jsonl"
	UsageGeminiJSON = "gemini-json"
	UsageNone       = "none"
)

// Rule is a screen rule: when Match matches the session's output, either
// Reply is typed into the pty (answering a prompt), or the session ends at
// once with Outcome and Detail. Exactly one of Reply and Outcome is set.
type Rule struct {
	Match   string // a Go regexp (RE2 syntax), validated at load
	Reply   string
	Outcome walkie.Outcome // one of walkie.RuleOutcomes
	Detail  string         // one line a person understands
}

// Limits bound the sessions walkie starts. Zero means no limit. The
// per-agent ones are counted in one ledger for the whole machine, by every
// form of the controller (controller/ledger); max_sessions by each
// process on its own.
type Limits struct {
	MaxSessions          int                // sessions at once across all debates of one process
	PerAgentSessions     map[string]int     // sessions at once per agent
	PerAgentTurnsPerHour map[string]int     // turns started per agent per rolling hour
	PerAgentDailyUSD     map[string]float64 // US dollars an agent may spend per local day
}

// PerAgent reports whether any per-agent limit is set: what needs the
// machine's ledger.
func (l Limits) PerAgent() bool {
	return len(l.PerAgentSessions) > 0 || len(l.PerAgentTurnsPerHour) > 0 || len(l.PerAgentDailyUSD) > 0
}

// Notify lists the notification sinks. A sink with its main field empty is off.
type Notify struct {
	Command        []string // argv; event JSON on stdin
	Webhook        Webhook
	Telegram       Telegram
	CopySupervisor bool // send a copy of every entry to the supervisor
}

// Serve configures walkie serve's HTTP surface.
type Serve struct {
	// AllowedHosts are Host names the daemon answers for besides its
	// listen address and loopback: a reverse proxy's name. A name without
	// a port matches any port.
	AllowedHosts []string
}

// hostRE is a Host header as a browser sends it: a name or an IPv4
// address, or an IPv6 address in brackets, then an optional port.
var hostRE = regexp.MustCompile(`^([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$`)

// CheckHost checks one allowed host (serve.allowed_hosts, --allowed-host).
func CheckHost(s string) error {
	if m := hostRE.FindStringSubmatch(s); m == nil || !validPort(strings.TrimPrefix(m[3], ":")) {
		return fmt.Errorf("%q is not a host name: write a name, optionally with :port, as a browser sends it (walkie.example.com, walkie.example.com:8443), without a scheme or path", s)
	}
	return nil
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return s == "" || (err == nil && n > 0 && n <= 65535)
}

// Webhook posts event JSON to URL.
type Webhook struct {
	URL     string
	Headers map[string]string
}

// Telegram sends events with the Bot API's sendMessage.
type Telegram struct {
	ChatID   string
	TokenEnv string // environment variable holding the bot token; default TELEGRAM_BOT_TOKEN
	APIURL   string // default https://api.telegram.org (tests point it at a stand-in)
}

// Enabled reports whether the sink is configured.
func (w Webhook) Enabled() bool { return w.URL != "" }

// Enabled reports whether the sink is configured.
func (t Telegram) Enabled() bool { return t.ChatID != "" }

// Built-in defaults.
const (
	DefaultTimeout   = 15 * time.Minute
	DefaultStall     = 5 * time.Minute
	DefaultGrace     = 5 * time.Second
	DefaultKillGrace = 2 * time.Second
	DefaultRetries   = 1
	DefaultDebounce  = 2 * time.Minute
	DefaultPrompt    = "turn"
	DefaultDir       = "{dir}"
	DefaultTokenEnv  = "TELEGRAM_BOT_TOKEN"
	DefaultTelegram  = "https://api.telegram.org"
	// DefaultTranscriptCap keeps a transcript's first and last 4 MiB: the
	// start of a session and its end, where the CLIs print their result
	// and usage.
	DefaultTranscriptCap = 8 << 20
)

// DefaultEnvAllow are the parent variables every agent gets. Locale
// variables are named one by one (POSIX and glibc's): a prefix like LC_*
// would also pass any LC_SECRET a user happens to have.
var DefaultEnvAllow = []string{"PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_COLLATE", "LC_MESSAGES", "LC_MONETARY",
	"LC_NUMERIC", "LC_TIME", "LC_ADDRESS", "LC_IDENTIFICATION", "LC_MEASUREMENT", "LC_NAME", "LC_PAPER", "LC_TELEPHONE",
	"TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR"}

func builtinDefaults() AgentDefaults {
	return AgentDefaults{
		Timing: Timing{
			Timeout:   DefaultTimeout,
			Stall:     DefaultStall,
			Grace:     DefaultGrace,
			KillGrace: DefaultKillGrace,
			Retries:   DefaultRetries,
			Debounce:  DefaultDebounce,
			// TranscriptCap, below the rest so its name fits.
			TranscriptCap: DefaultTranscriptCap,
		},
		EnvAllow: slices.Clone(DefaultEnvAllow),
		Home:     HomePrivate,
		Boundary: defaultBoundary(),
	}
}

// Default returns the configuration used when no file is found: the
// built-in defaults, presets, prompts and pricing.
func Default() *Config {
	c, err := Parse("", nil)
	if err != nil {
		panic("config: built-in defaults do not validate: " + err.Error())
	}
	return c
}

// Load finds and parses the configuration: explicitPath if given (it must
// exist), else ./walkie.yaml, else os.UserConfigDir()/walkie/config.yaml.
// When none exists it returns Default().
func Load(explicitPath string) (*Config, error) {
	if explicitPath != "" {
		data, err := os.ReadFile(explicitPath)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		return Parse(explicitPath, data)
	}
	for _, p := range SearchPaths() {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		return Parse(p, data)
	}
	return Default(), nil
}

// SearchPaths lists the files Load tries when no path is given, in order.
func SearchPaths() []string {
	paths := []string{FileName}
	if dir, err := os.UserConfigDir(); err == nil {
		paths = append(paths, filepath.Join(dir, "walkie", "config.yaml"))
	}
	return paths
}

// Agent returns the named agent. A name that is neither configured nor a
// preset is an error listing the known agents.
func (c *Config) Agent(name string) (Agent, error) {
	a, ok := c.Agents[name]
	if !ok {
		msg := fmt.Sprintf("config: no agent %q", name)
		if s := suggest(name, c.AgentNames()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return Agent{}, fmt.Errorf("%s; known agents: %s (add it under agents: in %s)",
			msg, strings.Join(c.AgentNames(), ", "), cmp.Or(c.Path, FileName))
	}
	return a.clone(), nil
}

// IsPerson reports whether name is one of people:.
func (c *Config) IsPerson(name string) bool {
	_, ok := c.People[name]
	return ok
}

// PersonOfChat is the person whose Telegram chat id is chat, if any.
func (c *Config) PersonOfChat(chat string) (string, bool) {
	for _, name := range sortedKeys(c.People) {
		if p := c.People[name]; p.Telegram != "" && p.Telegram == chat {
			return name, true
		}
	}
	return "", false
}

// Suggest returns the one of candidates that s is most likely a typo of,
// or "" when none is close: the did-you-mean of every message that names
// an unknown agent, person or key.
func Suggest(s string, candidates []string) string { return suggest(s, candidates) }

// AgentNames returns the known agent names, sorted.
func (c *Config) AgentNames() []string { return sortedKeys(c.Agents) }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func (a Agent) clone() Agent {
	a.Command = slices.Clone(a.Command)
	a.EnvAllow = slices.Clone(a.EnvAllow)
	a.Rules = slices.Clone(a.Rules)
	a.Env = maps.Clone(a.Env)
	a.HomeFiles = maps.Clone(a.HomeFiles)
	a.Tools = cloneTools(a.Tools)
	a.SandboxRead = slices.Clone(a.SandboxRead)
	a.SandboxWrite = slices.Clone(a.SandboxWrite)
	return a
}
