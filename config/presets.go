package config

import (
	"cmp"
	"slices"
)

// PresetNames are the built-in presets, in the order docs list them.
var PresetNames = []string{"claude", "codex", "gemini"}

// IsPreset reports whether name is a built-in preset.
func IsPreset(name string) bool { return slices.Contains(PresetNames, name) }

// Modes of a preset: what its CLI lets the agent change.
const (
	// ModeWrite lets the agent write inside its working directory, and
	// nowhere else: what a debate turn (appending to the walkie file), a
	// round table's implementer and its reviewers (each writing a verdict
	// into a sandbox of its own) need.
	ModeWrite = "write"
	// ModeReadOnly is the CLI's own read-only mode: it may read and think,
	// and every write it tries fails (the CLI still exits 0). An agent in
	// this mode cannot take a turn that must be written to a file.
	ModeReadOnly = "read-only"
)

// Modes lists the modes in the order docs list them.
var Modes = []string{ModeWrite, ModeReadOnly}

// TmpDir modes.
const (
	TmpDirPrivate = "private" // a fresh TMPDIR per session, removed with it
	TmpDirInherit = "inherit" // TMPDIR as env_allow passes it (or the system's)
)

// preset returns a fresh copy of the named preset in the given mode ("" is
// ModeWrite), before defaults apply to its timing fields. The flags are
// the least permission that lets each CLI do its part headless and
// unattended, as root and as an ordinary user; docs/agents.md has the
// measurements behind every choice.
//
// The machine output of each is a stream of events, not one object at the
// end: a long turn prints as it goes, so the stall window sees a working
// agent as alive. The screen rules match that output's own structure (a
// result event, a line start), never free text, because the stream also
// carries what the agent read: a debate about these very errors must not
// end a turn.
func preset(name, mode string) (Agent, bool) {
	mode = cmp.Or(mode, ModeWrite)
	switch name {
	case "claude":
		perm := "acceptEdits" // edits and shell writes inside the working directory only
		if mode == ModeReadOnly {
			perm = "plan" // no edits, no shell
		}
		return Agent{
			Preset: "claude",
			Mode:   mode,
			Command: []string{
				"claude",
				// -p: print mode, one answer then exit; also skips the trust dialog.
				"-p", "{prompt}",
				// Events as they happen, the result object (cost, usage) last.
				"--output-format", "stream-json", "--verbose",
				// No --allowedTools: acceptEdits already allows every write
				// inside the working directory (Edit, Write, echo/printf >>,
				// a quoted heredoc) and nothing outside it; an allow rule
				// would only widen that (Bash), or override plan mode.
				"--permission-mode", perm,
				// Every turn starts blank; nothing to resume, nothing to keep.
				"--no-session-persistence",
				// --model and --effort follow when model: and effort: are set
				// (presetFlags): claude's own defaults otherwise (2.1.197:
				// claude-opus-4-8 at effort high).
			},
			Env: map[string]string{
				// No telemetry, update checks or DNS look-ups beyond the model API.
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				// Two quick retries of a failed model call (about 2 s), not
				// ten over minutes: walkie's own retry policy takes it from there.
				"CLAUDE_CODE_MAX_RETRIES": "2",
			},
			EnvAllow: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "CLAUDE_CODE_*"},
			TmpDir:   TmpDirPrivate,
			Usage:    UsageClaudeJSON,
			Rules:    claudeRules(),
		}, true
	case "codex":
		sandbox := "workspace-write" // writes under the working directory (and temp) only
		if mode == ModeReadOnly {
			sandbox = "read-only"
		}
		return Agent{
			Preset: "codex",
			Mode:   mode,
			Command: []string{
				"codex", "exec",
				// JSONL events as they happen; turn.completed carries the usage.
				"--json",
				// The walkie file's directory need not be a git repository.
				"--skip-git-repo-check",
				"-s", sandbox,
				// Do not keep session files; every turn starts blank.
				"--ephemeral",
				// -m and -c model_reasoning_effort go here (presetFlags).
				"{prompt}",
			},
			// codex-cli 0.171.0's own default model. Its events do not name
			// the model, so walkie says which one runs (-m), and prices
			// what it said.
			Model: "gpt-6.2-sol",
			// Low whatever the model: 0.171.0 asks gpt-6.2-sol for low but
			// gpt-5.5 for medium by default (docs/agents.md), and a short
			// written turn needs little reasoning.
			Effort:   "low",
			EnvAllow: []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
			TmpDir:   TmpDirPrivate,
			Usage:    UsageCodexJSONL,
			Rules:    codexRules(),
		}, true
	case "gemini":
		approval := "auto_edit" // its file tools, confined to the workspace; no shell
		if mode == ModeReadOnly {
			approval = "plan" // no writes, no shell
		}
		return Agent{
			Preset: "gemini",
			Mode:   mode,
			Command: []string{
				"gemini",
				"-p", "{prompt}",
				// Events as they happen; the result event carries tokens per model.
				"-o", "stream-json",
				"--approval-mode", approval,
				// A fresh HOME trusts no folder; without this it exits 55.
				"--skip-trust",
			},
			Env: map[string]string{
				// The same, for a command that drops --skip-trust.
				"GEMINI_CLI_TRUST_WORKSPACE": "true",
			},
			EnvAllow: []string{"GEMINI_API_KEY", "GOOGLE_*"},
			HomeFiles: map[string]string{
				// A private HOME has no auth choice: select the API key (from
				// GEMINI_API_KEY); two tries per model call (about 5 s), not
				// ten; no update checks, usage statistics or telemetry.
				".gemini/settings.json": `{"security":{"auth":{"selectedType":"gemini-api-key"}},` +
					`"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false,"maxAttempts":2},` +
					`"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}` + "\n",
			},
			// gemini writes an error report per failed call into $TMPDIR.
			TmpDir: TmpDirPrivate,
			Usage:  UsageGeminiJSON,
			Rules:  geminiRules(),
		}, true
	}
	return Agent{}, false
}

// Efforts are the values each preset's CLI takes for its reasoning effort;
// a preset absent here has no such setting.
var Efforts = map[string][]string{
	"claude": {"low", "medium", "high", "xhigh", "max"},             // claude --help, 2.1.197
	"codex":  {"none", "minimal", "low", "medium", "high", "xhigh"}, // model_reasoning_effort
}

// presetFlags adds the flags of a's model and effort to its preset's
// command, each only when set, so an unset one leaves the CLI's own
// default: claude --model and --effort, codex -m and -c
// model_reasoning_effort, gemini -m (its CLI has no effort flag; without
// -m it routes each turn itself). The values stay placeholders, so the
// command reads as configured.
func (a *Agent) presetFlags() {
	var flags []string
	switch a.Preset {
	case "claude":
		if a.Model != "" {
			flags = append(flags, "--model", "{model}")
		}
		if a.Effort != "" {
			flags = append(flags, "--effort", "{effort}")
		}
	case "codex":
		if a.Model != "" {
			flags = append(flags, "-m", "{model}")
		}
		if a.Effort != "" {
			flags = append(flags, "-c", "model_reasoning_effort={effort}")
		}
	case "gemini":
		if a.Model != "" {
			flags = append(flags, "-m", "{model}")
		}
	}
	// Before a trailing prompt (codex exec's positional), else at the end.
	at := len(a.Command)
	if at > 0 && a.Command[at-1] == "{prompt}" {
		at--
	}
	a.Command = slices.Insert(a.Command, at, flags...)
}

// The rules below end a session at once with an outcome a person can act
// on. Each failure a CLI reports is one of:
//
//	auth            credentials missing or refused: never retried
//	blocked-prompt  the CLI refuses to run here (folder trust, usage limit)
//	stalled         the model API cannot be reached
//	crashed         the model API failed (5xx, 429): retried by walkie
//
// The patterns come from the real CLIs' output (cmd/fakemodel/testdata/runs).

// claudeResult matches the start of claude's result object for a failed
// run, up to its "result" text, which follows.
const claudeResult = `(?m)^\{"type":"result",[^\n]*"is_error":true,`

func claudeRules() []Rule {
	return []Rule{
		{
			Match:   claudeResult + `(?:"api_error_status":40[13],|[^\n]*"result":"(?:Not logged in|Invalid API key|OAuth token))`,
			Outcome: "auth",
			Detail:  "claude is not logged in or its API key was refused: set ANTHROPIC_API_KEY, or use home: inherit to reuse your own login",
		},
		{
			Match:   claudeResult + `[^\n]*"result":"[^"]*(?i:usage limit reached|hit your (?:usage )?limit|limit reached[^"]*resets)`,
			Outcome: "blocked-prompt",
			Detail:  "claude hit its usage limit: wait for the reset or switch accounts",
		},
		{
			Match:   `(?m)^--dangerously-skip-permissions cannot be used with root/sudo privileges`,
			Outcome: "blocked-prompt",
			Detail:  "claude refuses to skip permission checks as root: use --permission-mode acceptEdits, as the preset does",
		},
		{
			Match:   claudeResult + `"api_error_status":429,`,
			Outcome: "crashed",
			Detail:  "the model API is rate-limiting claude (HTTP 429)",
		},
		{
			Match:   claudeResult + `"api_error_status":5\d\d,`,
			Outcome: "crashed",
			Detail:  "the model API failed with a server error (HTTP 5xx) after claude's own retries",
		},
		{
			Match:   claudeResult + `[^\n]*"result":"(?:API Error: Unable to connect to API|Request timed out)`,
			Outcome: "stalled",
			Detail:  "claude cannot reach the model API (no network, a wrong ANTHROPIC_BASE_URL, or no answer in time)",
		},
	}
}

// codexFailed matches codex's final event for a failed turn, up to its
// message. Its "error" events come for every reconnect, also the ones it
// survives, so only turn.failed decides.
const codexFailed = `(?m)^\{"type":"turn\.failed","error":\{"message":"`

func codexRules() []Rule {
	reconnect := `^\{"type":"error","message":"Reconnecting\.\.\. waiting for network`
	return []Rule{
		{
			Match:   codexFailed + `(?:Missing environment variable|unexpected status 40[13])`,
			Outcome: "auth",
			Detail:  "codex has no API key or it was refused: set OPENAI_API_KEY (or CODEX_API_KEY), or use home: inherit to reuse your codex login",
		},
		{
			Match:   codexFailed + `(?i:[^"]*hit your usage limit)`,
			Outcome: "blocked-prompt",
			Detail:  "codex hit its usage limit: wait for the reset or switch accounts",
		},
		{
			Match:   `(?m)^Not inside a trusted directory and --skip-git-repo-check was not specified`,
			Outcome: "blocked-prompt",
			Detail:  "codex refused the directory (not a git repository): keep --skip-git-repo-check in the command",
		},
		{
			Match:   codexFailed + `[^"]*status:? 429`,
			Outcome: "crashed",
			Detail:  "the model API is rate-limiting codex (HTTP 429)",
		},
		{
			Match:   codexFailed + `(?:We’re currently experiencing high demand|[^"]*status:? 5\d\d|stream disconnected before completion)`,
			Outcome: "crashed",
			Detail:  "the model API failed (a server error, or a stream cut off) after codex's own retries",
		},
		{
			// Without a network codex never exits: it prints this every 5-25 s
			// for ever, and that output would keep the stall window from
			// firing. The second time in a row ends it; one is a blip.
			Match:   `(?m)` + reconnect + `(?s:.*)` + reconnect,
			Outcome: "stalled",
			Detail:  "codex cannot reach the model API (no network?); it waits for ever, so walkie ended it",
		},
	}
}

// geminiFailed matches gemini's result event for a failed run, up to the
// error in it; the API's own error JSON is quoted inside its message.
const geminiFailed = `(?m)^\{"type":"result",[^\n]*"status":"error",[^\n]*`

func geminiRules() []Rule {
	return []Rule{
		{
			// Before the model is called (exit 41), as a plain line, or as the
			// message of -o json's error object.
			Match:   `(?m)^(?:[ \t]*"message": ")?(?:Please set an Auth method|Invalid auth method selected|When using Gemini API, you must specify the GEMINI_API_KEY)`,
			Outcome: "auth",
			Detail:  "gemini has no credentials: set GEMINI_API_KEY, or use home: inherit to reuse your own login",
		},
		{
			Match:   geminiFailed + `(?:API key not valid|\\"code\\":40[13],)`,
			Outcome: "auth",
			Detail:  "gemini's API key was refused: check GEMINI_API_KEY",
		},
		{
			Match:   `(?m)^Gemini CLI is not running in a trusted directory`,
			Outcome: "blocked-prompt",
			Detail:  "gemini does not trust the folder: keep --skip-trust (or GEMINI_CLI_TRUST_WORKSPACE=true)",
		},
		{
			Match:   geminiFailed + `(?:\\"code\\":429,|Resource has been exhausted)`,
			Outcome: "crashed",
			Detail:  "the model API is rate-limiting gemini or its quota is spent (HTTP 429)",
		},
		{
			Match:   geminiFailed + `\\"code\\":5\d\d,`,
			Outcome: "crashed",
			Detail:  "the model API failed with a server error (HTTP 5xx) after gemini's own retries",
		},
		{
			// Every call fails to connect: the second failed attempt (it
			// would go on for a minute), or the last one.
			Match:   `(?m)^(?:Attempt (?:[2-9]|\d{2,}) failed|Error when talking to Gemini API)[^\n]*fetch failed`,
			Outcome: "stalled",
			Detail:  "gemini cannot reach the model API (no network, or a wrong GOOGLE_GEMINI_BASE_URL)",
		},
	}
}
