//go:build linux

package modelserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// claude -p as walkie's preset runs it: acceptEdits lets it change files
// under its working directory (including `echo … >> file` through Bash)
// and nothing else, and works as root, where bypassPermissions is refused.
var claudeArgs = []string{"-p", prompt, "--output-format", "json", "--permission-mode", "acceptEdits"}

func claudeRun(t *testing.T, srvURL string, args []string, extraEnv ...string) cliRun {
	env := []string(nil)
	if srvURL != "" {
		env = ClaudeEnv(srvURL)
	}
	return cliRun{bin: sessiontest.RealCLI(t, "claude"), args: args, env: append(env, extraEnv...)}
}

// claudeResult is the part of `claude -p --output-format json` walkie reads.
type claudeResult struct {
	Type           string  `json:"type"`
	Subtype        string  `json:"subtype"`
	IsError        bool    `json:"is_error"`
	APIErrorStatus *int    `json:"api_error_status"`
	Result         string  `json:"result"`
	NumTurns       int     `json:"num_turns"`
	TotalCostUSD   float64 `json:"total_cost_usd"`
	Usage          struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	ModelUsage map[string]struct {
		InputTokens  int     `json:"inputTokens"`
		OutputTokens int     `json:"outputTokens"`
		CostUSD      float64 `json:"costUSD"`
	} `json:"modelUsage"`
	PermissionDenials []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`
}

func parseClaude(t *testing.T, stdout string) claudeResult {
	t.Helper()
	var r claudeResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &r); err != nil {
		t.Fatalf("claude JSON output: %v\n%s", err, clip(stdout))
	}
	return r
}

func TestClaudeCLIAppendsTurn(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Anthropic: appendReplies("claude-was-here")})
	res := claudeRun(t, srv.URL, claudeArgs).run(t)
	wantExit(t, res, 0)
	wantLine(t, res.dir, "claude-was-here")
	if !srv.Saw(prompt) {
		t.Error("the prompt never reached the model")
	}
	// Two model calls: the tool call, then the answer after its result.
	reqs := srv.ModelRequests(Anthropic)
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), `"tool_result"`) {
		t.Errorf("%d model calls; the second should carry the tool_result", len(reqs))
	}
	r := parseClaude(t, res.stdout)
	u := DefaultUsage
	if r.IsError || r.Subtype != "success" || r.NumTurns != 2 || r.Usage.InputTokens != 2*u.InputTokens || r.Usage.OutputTokens != 2*u.OutputTokens || r.TotalCostUSD <= 0 {
		t.Errorf("result %+v", r)
	}
	if len(r.ModelUsage) != 1 {
		t.Errorf("modelUsage %+v, want one model", r.ModelUsage)
	}
	save(t, "claude", "claude-ok", claudeArgs, res, "acceptEdits; Bash echo >> turn.md in cwd", "claude-result.json")
}

// The same turn through claude's stream-json output, a sample for parsers
// that follow a session live.
func TestClaudeCLIStreamJSON(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Anthropic: appendReplies("claude-streamed")})
	args := []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"}
	res := claudeRun(t, srv.URL, args).run(t)
	wantExit(t, res, 0)
	wantLine(t, res.dir, "claude-streamed")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	last := parseClaude(t, lines[len(lines)-1])
	if last.Type != "result" || last.TotalCostUSD <= 0 {
		t.Errorf("last stream-json line %+v", last)
	}
	save(t, "claude", "claude-stream", args, res, "", "claude-stream.jsonl")
}

// claude's own file tools work under acceptEdits too: the model writes the
// file with Write instead of the shell.
func TestClaudeCLIWriteTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "turn.md")
	srv := Start(t, Script{Anthropic: []Reply{
		Tool("Write", map[string]any{"file_path": target, "content": "written-by-tool\n"}),
		Text("Wrote turn.md."),
	}})
	run := claudeRun(t, srv.URL, claudeArgs)
	run.dir = dir
	res := run.run(t)
	wantExit(t, res, 0)
	wantLine(t, dir, "written-by-tool")
}

// Read-only (reviewer) and default modes: the Bash call is denied, the file
// is untouched, and claude still exits 0, listing the denial.
func TestClaudeCLIReadOnlyModes(t *testing.T) {
	t.Parallel()
	for _, mode := range [][]string{{"--permission-mode", "plan"}, {"--permission-mode", "default"}} {
		srv := Start(t, Script{Anthropic: appendReplies("must-not-appear")})
		res := claudeRun(t, srv.URL, append([]string{"-p", prompt, "--output-format", "json"}, mode...)).run(t)
		wantExit(t, res, 0)
		wantNoFile(t, res.dir)
		r := parseClaude(t, res.stdout)
		if len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolName != "Bash" {
			t.Errorf("%v: permission_denials %+v", mode, r.PermissionDenials)
		}
	}
}

// acceptEdits does not reach outside the working directory.
func TestClaudeCLIAcceptEditsStaysInCwd(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "outside.md")
	srv := Start(t, Script{Anthropic: []Reply{Shell("echo escaped >> " + outside), Text("done")}})
	res := claudeRun(t, srv.URL, claudeArgs).run(t)
	wantExit(t, res, 0)
	if _, err := os.Stat(outside); err == nil {
		t.Error("acceptEdits let Bash write outside the working directory")
	}
	if r := parseClaude(t, res.stdout); len(r.PermissionDenials) != 1 {
		t.Errorf("permission_denials %+v", r.PermissionDenials)
	}
}

func TestClaudeCLIRootRefusesBypass(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root is refused --dangerously-skip-permissions")
	}
	srv := Start(t, Script{Anthropic: appendReplies("bypass")})
	res := claudeRun(t, srv.URL, []string{"-p", prompt, "--dangerously-skip-permissions"}).run(t)
	wantExit(t, res, 1)
	mustContain(t, "stderr", res.stderr, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons")
	wantNoFile(t, res.dir)
	save(t, "claude", "claude-root-bypass", []string{"-p", prompt, "--dangerously-skip-permissions"}, res, "as root without IS_SANDBOX=1", "")
}

func TestClaudeCLINotLoggedIn(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		args := []string{"-p", prompt, "--output-format", format}
		res := claudeRun(t, "", args).run(t)
		wantExit(t, res, 1)
		mustContain(t, "stdout", res.stdout, "Not logged in · Please run /login")
		if format == "json" {
			if r := parseClaude(t, res.stdout); !r.IsError || r.Subtype != "success" || r.APIErrorStatus != nil {
				t.Errorf("result %+v", r)
			}
		}
		save(t, "claude", "claude-not-logged-in-"+format, args, res, "empty HOME, no ANTHROPIC_API_KEY", "")
	}
}

func TestClaudeCLIInvalidKey(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Anthropic: []Reply{Error(401, "invalid x-api-key")}})
	args := []string{"-p", prompt, "--output-format", "json"}
	res := claudeRun(t, srv.URL, args).run(t)
	wantExit(t, res, 1)
	r := parseClaude(t, res.stdout)
	if !r.IsError || r.APIErrorStatus == nil || *r.APIErrorStatus != 401 || r.Result != "Invalid API key · Fix external API key" {
		t.Errorf("result %+v", r)
	}
	save(t, "claude", "claude-http-401", args, res, "server answers 401 authentication_error", "")
}

func TestClaudeCLIServerError(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Anthropic: []Reply{Error(500, "fakemodel: scripted server error")}})
	for _, format := range []string{"text", "json"} {
		args := []string{"-p", prompt, "--output-format", format}
		res := claudeRun(t, srv.URL, args).run(t)
		wantExit(t, res, 1)
		mustContain(t, "stdout", res.stdout, "API Error: 500 fakemodel: scripted server error")
		if res.dur > 20*time.Second {
			t.Errorf("took %v with CLAUDE_CODE_MAX_RETRIES=0", res.dur)
		}
		if format == "json" {
			if r := parseClaude(t, res.stdout); !r.IsError || r.APIErrorStatus == nil || *r.APIErrorStatus != 500 {
				t.Errorf("result %+v", r)
			}
		}
		save(t, "claude", "claude-http-500-"+format, args, res, "CLAUDE_CODE_MAX_RETRIES=0", "")
		srv = Start(t, Script{Anthropic: []Reply{Error(500, "fakemodel: scripted server error")}})
	}
}

func TestClaudeCLIConnectionRefused(t *testing.T) {
	t.Parallel()
	u, err := ClosedURL()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-p", prompt, "--output-format", "json"}
	res := claudeRun(t, u, args).run(t)
	wantExit(t, res, 1)
	if r := parseClaude(t, res.stdout); r.Result != "API Error: Unable to connect to API (ConnectionRefused)" {
		t.Errorf("result %+v", r)
	}
	save(t, "claude", "claude-connection-refused", args, res, "ANTHROPIC_BASE_URL at a closed port", "")
}

// A model that never answers: claude waits (its own limit is about five
// minutes) unless API_TIMEOUT_MS is lowered; then it prints
// "Request timed out" and exits 1.
func TestClaudeCLIHang(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := Start(t, Script{Anthropic: []Reply{Hang()}})
	run := claudeRun(t, srv.URL, []string{"-p", prompt, "--output-format", "json"})
	run.limit = 15 * time.Second
	res := run.run(t)
	killedWaiting(t, srv, res)
	// claude handles SIGTERM and exits 128+15.
	if res.code != 143 {
		t.Errorf("exit %d (signal %q) after SIGTERM, want 143", res.code, res.signal)
	}
	save(t, "claude", "claude-hang", run.args, res, "server holds the request; claude waits ~300 s by itself", "")

	srv = Start(t, Script{Anthropic: []Reply{Hang()}})
	run = claudeRun(t, srv.URL, []string{"-p", prompt, "--output-format", "json"}, "API_TIMEOUT_MS=3000")
	res = run.run(t)
	wantExit(t, res, 1)
	if r := parseClaude(t, res.stdout); r.Result != "Request timed out" || !r.IsError {
		t.Errorf("result %+v", r)
	}
	save(t, "claude", "claude-hang-api-timeout", run.args, res, "API_TIMEOUT_MS=3000", "")
}

// A stream that stops mid-answer: API_TIMEOUT_MS does not cover it, so
// only the caller's stall detection ends it.
func TestClaudeCLIStall(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := Start(t, Script{Anthropic: []Reply{Stall("half an ans")}})
	run := claudeRun(t, srv.URL, []string{"-p", prompt, "--output-format", "json"}, "API_TIMEOUT_MS=3000")
	run.limit = 15 * time.Second
	res := run.run(t)
	killedWaiting(t, srv, res)
	save(t, "claude", "claude-stall", run.args, res, "stream stops after the first delta; API_TIMEOUT_MS=3000 does not end it", "")
}

func TestClaudeCLIRateLimited(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Anthropic: []Reply{Error(429, "rate limited")}})
	args := []string{"-p", prompt, "--output-format", "json"}
	res := claudeRun(t, srv.URL, args).run(t)
	wantExit(t, res, 1)
	r := parseClaude(t, res.stdout)
	if !r.IsError || r.APIErrorStatus == nil || *r.APIErrorStatus != 429 || r.Result != "API Error: Request rejected (429) · rate limited" {
		t.Errorf("result %+v", r)
	}
	save(t, "claude", "claude-http-429", args, res, "rate_limit_error, CLAUDE_CODE_MAX_RETRIES=0", "")
}

// A multi-line turn appended with a heredoc. acceptEdits allows one with a
// quoted delimiter (<<'EOF', no expansion) but denies <<EOF, whose body
// could run $(…); a Bash(cat:*) rule does not change that, only allowing
// all of Bash does. Likewise a Bash(echo:*) rule does not cover
// `echo … >> file`: claude judges the redirection, not the command name.
func TestClaudeCLIHeredocAppend(t *testing.T) {
	t.Parallel()
	quoted := "cat >> turn.md <<'EOF'\n## Turn 2 · claude\nbody\nEOF"
	unquoted := "cat >> turn.md <<EOF\n## Turn 2 · claude\nbody\nEOF"
	for _, tc := range []struct {
		command string
		extra   []string
		appends bool
	}{
		{quoted, nil, true},
		{unquoted, nil, false},
		{unquoted, []string{"--allowedTools", "Bash(cat:*)"}, false},
		{unquoted, []string{"--allowedTools", "Bash"}, true},
	} {
		srv := Start(t, Script{Anthropic: []Reply{Shell(tc.command), Text("done")}})
		res := claudeRun(t, srv.URL, append(append([]string(nil), claudeArgs...), tc.extra...)).run(t)
		wantExit(t, res, 0)
		b, _ := os.ReadFile(filepath.Join(res.dir, "turn.md"))
		if got := strings.Contains(string(b), "body"); got != tc.appends {
			t.Errorf("acceptEdits %v, %q: appended %t, want %t", tc.extra, tc.command, got, tc.appends)
		}
	}
	srv := Start(t, Script{Anthropic: []Reply{Shell("echo x >> turn.md"), Text("done")}})
	res := claudeRun(t, srv.URL, []string{"-p", prompt, "--output-format", "json", "--allowedTools", "Bash(echo:*)"}).run(t)
	wantExit(t, res, 0)
	wantNoFile(t, res.dir)
}
