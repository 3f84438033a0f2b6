package config

import "slices"

// PresetNames are the built-in presets, in the order docs list them.
var PresetNames = []string{"claude", "codex", "gemini"}

// IsPreset reports whether name is a built-in preset.
func IsPreset(name string) bool { return slices.Contains(PresetNames, name) }

// preset returns a fresh copy of the named preset, before defaults apply to
// its timing fields. The flags are the least permission that lets each CLI
// append to the walkie file headless and unattended, as root and as an
// ordinary user (facts in docs/configuration.md and the agent-CLI notes).
func preset(name string) (Agent, bool) {
	switch name {
	case "claude":
		return Agent{
			Preset: "claude",
			Command: []string{
				"claude",
				// -p: print mode, one answer then exit; also skips the trust dialog.
				"-p", "{prompt}",
				// json: a single result object carrying total_cost_usd and usage.
				"--output-format", "json",
				// acceptEdits lets the agent edit files in its working directory
				// without asking; bypassPermissions would let it do anything and
				// is refused as root anyway (unless IS_SANDBOX=1).
				"--permission-mode", "acceptEdits",
				// Read the file (and the code under debate), append with
				// Edit/Write or a shell append (cat >> / printf >>). No other
				// shell commands: a debate turn needs none.
				"--allowedTools", "Read,Grep,Glob,Edit,Write,Bash(cat:*),Bash(printf:*)",
				// Every turn starts blank; nothing to resume, nothing to keep.
				"--no-session-persistence",
			},
			Env: map[string]string{
				// No telemetry, update checks or DNS look-ups beyond the model API.
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			},
			EnvAllow: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "CLAUDE_CODE_*"},
			Usage:    UsageClaudeJSON,
			Rules: []Rule{
				{
					Match:   `Not logged in|Invalid API key`,
					Outcome: "auth",
					Detail:  "claude is not logged in: set ANTHROPIC_API_KEY, or use home: inherit to reuse your own login",
				},
				{
					Match:   `(?i)usage limit reached|you've (hit|reached) your (usage )?limit|\blimit reached\b.*\bresets\b`,
					Outcome: "blocked-prompt",
					Detail:  "claude hit its usage limit: wait for the reset or switch accounts",
				},
			},
		}, true
	case "codex":
		return Agent{
			Preset: "codex",
			Command: []string{
				"codex", "exec",
				// The walkie file's directory need not be a git repository.
				"--skip-git-repo-check",
				// workspace-write: writes only inside the working directory (and
				// temp); read-only cannot append, danger-full-access is not needed.
				"-s", "workspace-write",
				// JSONL events; turn.completed carries the token usage.
				"--json",
				// Do not keep session files; every turn starts blank.
				"--ephemeral",
				"-C", "{dir}",
				"{prompt}",
			},
			EnvAllow: []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY", "CODEX_HOME"},
			Usage:    UsageCodexJSONL,
			// codex's events do not name the model; this is what pricing assumes.
			// Set model: (and -m {model} in the command) to price another one.
			Model: "gpt-5-codex",
			Rules: []Rule{
				{
					Match:   `Not inside a trusted directory`,
					Outcome: "blocked-prompt",
					Detail:  "codex refused the directory: keep --skip-git-repo-check in the command",
				},
				{
					// Without a network codex prints this and waits forever, and the
					// steady output would defeat the stall window.
					Match:   `waiting for network`,
					Outcome: "stalled",
					Detail:  "codex cannot reach the model API (no network)",
				},
			},
		}, true
	case "gemini":
		return Agent{
			Preset: "gemini",
			Command: []string{
				"gemini",
				"-p", "{prompt}",
				// json: {response, stats} with token counts per model.
				"-o", "json",
				// Headless gemini refuses any tool that needs approval, and
				// auto_edit does not cover the shell tool it often appends
				// with; yolo is the mode that works unattended.
				"--approval-mode", "yolo",
				// A fresh HOME has no trusted folders; without this it exits 55.
				"--skip-trust",
			},
			Env: map[string]string{
				"GEMINI_CLI_TRUST_WORKSPACE": "true",
			},
			EnvAllow: []string{"GEMINI_API_KEY", "GOOGLE_*"},
			HomeFiles: map[string]string{
				// A private HOME has no auth choice; select the API key (from
				// GEMINI_API_KEY) and switch off update checks and telemetry.
				".gemini/settings.json": `{"security":{"auth":{"selectedType":"gemini-api-key"}},` +
					`"general":{"enableAutoUpdate":false},"privacy":{"usageStatisticsEnabled":false},` +
					`"telemetry":{"enabled":false}}` + "\n",
			},
			Usage: UsageGeminiJSON,
			Rules: []Rule{
				{
					Match:   `Please set an Auth method`,
					Outcome: "auth",
					Detail:  "gemini has no credentials: set GEMINI_API_KEY, or use home: inherit to reuse your own login",
				},
			},
		}, true
	}
	return Agent{}, false
}
