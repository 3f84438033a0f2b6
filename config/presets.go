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
	a, ok := presetCommand(name, cmp.Or(mode, ModeWrite))
	a.Tools = defaultRoleTools(name)
	return a, ok
}

// presetCommand is the preset's command and settings in mode.
func presetCommand(name, mode string) (Agent, bool) {
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
			// CLAUDE_CODE_* is Claude Code's own namespace: everything in it
			// configures this CLI and nothing else, so a prefix passes no
			// one else's secret.
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
			// By name, not GOOGLE_*: that prefix is shared by every Google
			// SDK and tool (an app's GOOGLE_CLIENT_SECRET, or
			// GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES, which lets
			// credentials run programs). These are the ones gemini 0.61
			// reads for its auth, project and endpoints.
			EnvAllow: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_ACCESS_TOKEN",
				"GOOGLE_CLOUD_LOCATION", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_PROJECT_ID", "GOOGLE_CLOUD_QUOTA_PROJECT", "GOOGLE_CLOUD_REGION",
				"GOOGLE_CLOUD_UNIVERSE_DOMAIN", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_API_VERSION", "GOOGLE_GENAI_USE_GCA",
				"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_VERTEX_BASE_URL"},
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

// Each rule matches the failure as the CLI reports it in any output
// format the user's command may pick: its JSON result event (json,
// stream-json) or, in text mode, the line it prints instead (issue 12.13).
// Both are anchored at a line start, where an agent's own text read back
// from a file never is in the JSON forms; in text mode claude and gemini
// print only the final answer on stdout, after the turn is written.

// claudeSaid matches claude's failure text at the start of a line: the
// "result" of its failed result event, or the text alone, as
// --output-format text prints it ("Not logged in · Please run /login").
func claudeSaid(text string) string {
	return `(?m)^(?:\{"type":"result",[^\n]*"is_error":true,[^\n]*"result":")?(?:` + text + `)`
}

// claudeStatus matches claude's failed result event by its HTTP status.
func claudeStatus(status string) string {
	return `(?m)^\{"type":"result",[^\n]*"is_error":true,"api_error_status":` + status + `,`
}

func claudeRules() []Rule {
	return []Rule{
		{
			Match:   claudeStatus(`40[13]`) + `|` + claudeSaid(`Not logged in|Invalid API key|OAuth token`),
			Outcome: "auth",
			Detail:  "claude is not logged in or its API key was refused: set ANTHROPIC_API_KEY, or use home: inherit to reuse your own login",
		},
		{
			Match:   claudeSaid(`[^"\n]*(?i:usage limit reached|hit your (?:usage )?limit|limit reached[^"\n]*resets)`),
			Outcome: "blocked-prompt",
			Detail:  "claude hit its usage limit: wait for the reset or switch accounts",
		},
		{
			Match:   `(?m)^--dangerously-skip-permissions cannot be used with root/sudo privileges`,
			Outcome: "blocked-prompt",
			Detail:  "claude refuses to skip permission checks as root: use --permission-mode acceptEdits, as the preset does",
		},
		{
			Match:   claudeStatus(`429`) + `|` + claudeSaid(`API Error: Request rejected \(429\)|API Error: 429\b`),
			Outcome: "crashed",
			Detail:  "the model API is rate-limiting claude (HTTP 429)",
		},
		{
			Match:   claudeStatus(`5\d\d`) + `|` + claudeSaid(`API Error: 5\d\d\b`),
			Outcome: "crashed",
			Detail:  "the model API failed with a server error (HTTP 5xx) after claude's own retries",
		},
		{
			Match:   claudeSaid(`API Error: Unable to connect to API|Request timed out`),
			Outcome: "stalled",
			Detail:  "claude cannot reach the model API (no network, a wrong ANTHROPIC_BASE_URL, or no answer in time)",
		},
	}
}

// codexSaid matches codex's message for a failed turn: its turn.failed
// event's with --json (its "error" events come for every reconnect, also
// the ones it survives, so only turn.failed decides), or, in text mode,
// the ERROR line it prints. Text mode prints survived errors as ERROR
// lines too, always as "Reconnecting… (message)", so text is matched from
// the start of the message, never after a prefix that could be one.
func codexSaid(json, text string) string {
	return `(?m)^(?:\{"type":"turn\.failed","error":\{"message":"(?:` + json + `)|ERROR: (?:` + text + `))`
}

func codexRules() []Rule {
	reconnect := `^(?:\{"type":"error","message":"|ERROR: )Reconnecting\.\.\. waiting for network`
	auth := `Missing environment variable|unexpected status 40[13]`
	return []Rule{
		{
			Match:   codexSaid(auth, auth),
			Outcome: "auth",
			Detail:  "codex has no API key or it was refused: set OPENAI_API_KEY (or CODEX_API_KEY), or use home: inherit to reuse your codex login",
		},
		{
			Match:   codexSaid(`(?i:[^"]*hit your usage limit)`, `(?i:You've hit your usage limit|You have hit your usage limit)`),
			Outcome: "blocked-prompt",
			Detail:  "codex hit its usage limit: wait for the reset or switch accounts",
		},
		{
			Match:   `(?m)^Not inside a trusted directory and --skip-git-repo-check was not specified`,
			Outcome: "blocked-prompt",
			Detail:  "codex refused the directory (not a git repository): keep --skip-git-repo-check in the command",
		},
		{
			Match:   codexSaid(`[^"]*status:? 429`, `(?:exceeded retry limit, last status|unexpected status):? 429`),
			Outcome: "crashed",
			Detail:  "the model API is rate-limiting codex (HTTP 429)",
		},
		{
			Match: codexSaid(`We’re currently experiencing high demand|[^"]*status:? 5\d\d|stream disconnected before completion`,
				`We’re currently experiencing high demand|(?:exceeded retry limit, last status|unexpected status):? 5\d\d|stream disconnected before completion`),
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

// geminiSaid matches gemini's report of a failed model call: the result
// event of -o stream-json, where the API's error JSON is quoted inside its
// message (json), or, with -o text or -o json, the "Error when talking to
// Gemini API" line it prints once its retries are spent, holding the same
// error unquoted (text).
func geminiSaid(json, text string) string {
	return `(?m)^(?:\{"type":"result",[^\n]*"status":"error",[^\n]*(?:` + json + `)|Error when talking to Gemini API[^\n]*(?:` + text + `))`
}

// geminiStatus matches gemini's last failed model call by its HTTP
// status, whatever the API's message: the "Error when talking to Gemini
// API" line, then the error object it prints after it (node's inspect
// form, its stack trace between), closed by "  status: N". The message on
// the line itself may be any text the API sent ("RetryableQuotaError:
// Please wait a bit.").
func geminiStatus(status string) string {
	return `(?m)^Error when talking to Gemini API[^\n]*\n(?:[^\n]*\n){0,40}?  status: (?:` + status + `)\r?$`
}

// gemini429 is the text gemini itself adds to a 429's message in its
// result event, whatever the API said: for an API key, for Vertex, and
// for a Google login (which then switches models).
const gemini429 = `\\n(?:Please wait and try again later\. To increase your limits|Possible quota limitations in place)|\(Status: RESOURCE_EXHAUSTED\)`

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
			Match:   geminiSaid(`API key not valid|\\"code\\":40[13],`, `API key not valid|"code":40[13],`),
			Outcome: "auth",
			Detail:  "gemini's API key was refused: check GEMINI_API_KEY",
		},
		{
			Match:   `(?m)^Gemini CLI is not running in a trusted directory`,
			Outcome: "blocked-prompt",
			Detail:  "gemini does not trust the folder: keep --skip-trust (or GEMINI_CLI_TRUST_WORKSPACE=true)",
		},
		{
			Match:   geminiSaid(`\\"code\\":429,|Resource has been exhausted|`+gemini429, `"code":429,|Resource has been exhausted`) + `|` + geminiStatus(`429`),
			Outcome: "crashed",
			Detail:  "the model API is rate-limiting gemini or its quota is spent (HTTP 429)",
		},
		{
			Match:   geminiSaid(`\\"code\\":5\d\d,`, `"code":5\d\d,`) + `|` + geminiStatus(`5\d\d`),
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
