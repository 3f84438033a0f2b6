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

// In headless mode gemini drops every tool that would ask for approval:
// without a rule allowing it, run_shell_command is "not found". The least
// permission that lets the fake model's `echo … >> turn.md` run is a policy
// rule for commands starting with echo, with redirection allowed (gemini
// otherwise asks about any command with a redirection). --yolo works too
// but allows every tool.
const geminiEchoPolicy = `[[rule]]
toolName = "run_shell_command"
commandPrefix = "echo"
allowRedirection = true
decision = "allow"
priority = 100
`

func geminiPolicy(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "walkie-echo.toml")
	if err := os.WriteFile(p, []byte(geminiEchoPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// geminiRun prepares a gemini run with a private HOME written by
// WriteGeminiHome (when srvURL is set).
func geminiRun(t *testing.T, srvURL string, args []string, extraEnv ...string) cliRun {
	t.Helper()
	run := cliRun{bin: sessiontest.RealCLI(t, "gemini"), args: args, home: t.TempDir()}
	if srvURL != "" {
		env, err := WriteGeminiHome(run.home, srvURL)
		if err != nil {
			t.Fatal(err)
		}
		run.env = env
	}
	run.env = append(run.env, extraEnv...)
	// gemini is slow to start on a loaded 2-core machine.
	run.limit = 120 * time.Second
	return run
}

// geminiResult is the part of `gemini -o json` walkie reads.
type geminiResult struct {
	Response string `json:"response"`
	Stats    struct {
		Models map[string]struct {
			Tokens struct {
				Input      int `json:"input"`
				Prompt     int `json:"prompt"`
				Candidates int `json:"candidates"`
				Total      int `json:"total"`
				Cached     int `json:"cached"`
				Thoughts   int `json:"thoughts"`
			} `json:"tokens"`
		} `json:"models"`
		Tools struct {
			TotalCalls   int `json:"totalCalls"`
			TotalSuccess int `json:"totalSuccess"`
			TotalFail    int `json:"totalFail"`
		} `json:"tools"`
	} `json:"stats"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    int    `json:"code"`
	} `json:"error"`
}

// parseGemini decodes the JSON object in s; gemini prints it on stdout
// for results and on stderr, after any stack trace, for errors.
func parseGemini(t *testing.T, s string) geminiResult {
	t.Helper()
	// The object starts at the last line that is just "{": a stack trace
	// before it can hold "{" too, but never at the start of a line.
	i := strings.LastIndex("\n"+s, "\n{\n")
	if i < 0 {
		t.Fatalf("no JSON object in gemini output:\n%s", clip(s))
	}
	var r geminiResult
	if err := json.NewDecoder(strings.NewReader(s[i:])).Decode(&r); err != nil {
		t.Fatalf("gemini JSON output: %v\n%s", err, clip(s))
	}
	return r
}

func geminiArgs(extra ...string) []string {
	return append([]string{"-p", prompt, "-m", GeminiModel, "-o", "json"}, extra...)
}

func TestGeminiCLIAppendsTurn(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Gemini: appendReplies("gemini-was-here")})
	args := geminiArgs("--skip-trust", "--policy", geminiPolicy(t))
	res := geminiRun(t, srv.URL, args).run(t)
	wantExit(t, res, 0)
	wantLine(t, res.dir, "gemini-was-here")
	if !srv.Saw(prompt) {
		t.Error("the prompt never reached the model")
	}
	reqs := srv.ModelRequests(Gemini)
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), `"functionResponse"`) {
		t.Errorf("%d model calls; the second should carry the functionResponse", len(reqs))
	}
	r := parseGemini(t, res.stdout)
	m, ok := r.Stats.Models[GeminiModel]
	u := DefaultUsage
	if !ok || m.Tokens.Input != 2*u.InputTokens || m.Tokens.Candidates != 2*u.OutputTokens || m.Tokens.Total != 2*(u.InputTokens+u.OutputTokens) {
		t.Errorf("stats %+v", r.Stats)
	}
	if r.Stats.Tools.TotalSuccess != 1 {
		t.Errorf("tool stats %+v", r.Stats.Tools)
	}
	save(t, "gemini", "gemini-ok", args, res, "policy: run_shell_command commandPrefix echo, allowRedirection", "gemini-result.json")
}

func TestGeminiCLIStreamJSONAndYolo(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Gemini: appendReplies("gemini-yolo")})
	args := []string{"-p", prompt, "-m", GeminiModel, "-o", "stream-json", "--skip-trust", "--yolo"}
	res := geminiRun(t, srv.URL, args).run(t)
	wantExit(t, res, 0)
	wantLine(t, res.dir, "gemini-yolo")
	mustContain(t, "stream-json", res.stdout, `"type":"result"`)
	save(t, "gemini", "gemini-stream", args, res, "--yolo", "gemini-stream.jsonl")
}

// auto_edit lets gemini's own file tools (write_file, replace) write inside
// the workspace and nowhere else, and offers no shell tool: the least
// permission with which a gemini turn can append to the walkie file.
func TestGeminiCLIAutoEditWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := Start(t, Script{Gemini: []Reply{
		Tool("write_file", map[string]any{"file_path": filepath.Join(dir, "turn.md"), "content": "written-by-tool\n"}),
		Text("Wrote turn.md."),
	}})
	run := geminiRun(t, srv.URL, geminiArgs("--skip-trust", "--approval-mode", "auto_edit"))
	run.dir = dir
	res := run.run(t)
	wantExit(t, res, 0)
	wantLine(t, dir, "written-by-tool")

	// Appending to an existing file, as a turn does, goes through replace.
	dir = t.TempDir()
	target := filepath.Join(dir, "turn.md")
	if err := os.WriteFile(target, []byte("# Debate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv = Start(t, Script{Gemini: []Reply{
		Tool("replace", map[string]any{
			"file_path": target, "old_string": "# Debate\n", "new_string": "# Debate\nappended-by-replace\n",
			"instruction": "Append the turn at the end of the file.",
		}),
		Text("Appended."),
	}})
	run = geminiRun(t, srv.URL, geminiArgs("--skip-trust", "--approval-mode", "auto_edit"))
	run.dir = dir
	res = run.run(t)
	wantExit(t, res, 0)
	if b, _ := os.ReadFile(target); string(b) != "# Debate\nappended-by-replace\n" {
		t.Errorf("turn.md = %q after replace", b)
	}
	// auto_edit's edit tools stay inside the workspace.
	outside := filepath.Join(t.TempDir(), "outside.md")
	srv = Start(t, Script{Gemini: []Reply{
		Tool("write_file", map[string]any{"file_path": outside, "content": "escaped\n"}),
		Text("done"),
	}})
	res = geminiRun(t, srv.URL, geminiArgs("--skip-trust", "--approval-mode", "auto_edit")).run(t)
	wantExit(t, res, 0)
	if _, err := os.Stat(outside); err == nil {
		t.Error("auto_edit wrote outside the workspace")
	}
	if reqs := srv.ModelRequests(Gemini); len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "Path not in workspace") {
		t.Error("the tool result should say the path is not in the workspace")
	}
}

// Reviewer modes: in plan and default mode the shell tool is not offered
// headless at all; the call fails as "not found", the file is untouched,
// and gemini exits 0.
func TestGeminiCLIReadOnlyModes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"plan", "default"} {
		srv := Start(t, Script{Gemini: appendReplies("must-not-appear")})
		res := geminiRun(t, srv.URL, geminiArgs("--skip-trust", "--approval-mode", mode)).run(t)
		wantExit(t, res, 0)
		wantNoFile(t, res.dir)
		if reqs := srv.ModelRequests(Gemini); len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), `Tool \"run_shell_command\" not found`) {
			t.Errorf("%s: the tool result should say the shell tool is not found", mode)
		}
	}
}

func TestGeminiCLIAuthMissing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"gemini-auth-missing-text", []string{"-p", prompt}},
		{"gemini-auth-missing-json", []string{"-p", prompt, "-o", "json", "--skip-trust"}},
	} {
		res := geminiRun(t, "", tc.args).run(t)
		wantExit(t, res, 41)
		mustContain(t, "stderr", res.stderr, "Please set an Auth method in your "+filepath.Join(res.home, ".gemini", "settings.json")+" or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA")
		save(t, "gemini", tc.name, tc.args, res, "empty HOME, no GEMINI_API_KEY", "")
	}
}

func TestGeminiCLIKeyMissing(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{})
	args := geminiArgs("--skip-trust")
	run := geminiRun(t, srv.URL, args)
	var env []string
	for _, e := range run.env {
		if !strings.HasPrefix(e, "GEMINI_API_KEY=") {
			env = append(env, e)
		}
	}
	run.env = env
	res := run.run(t)
	wantExit(t, res, 41)
	mustContain(t, "stderr", res.stderr, "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.")
	save(t, "gemini", "gemini-key-missing", args, res, "settings choose gemini-api-key, GEMINI_API_KEY unset", "")
}

func TestGeminiCLIUntrustedFolder(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Gemini: appendReplies("x")})
	args := geminiArgs()
	res := geminiRun(t, srv.URL, args).run(t)
	wantExit(t, res, 55)
	mustContain(t, "stderr", res.stderr, "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode.")
	if len(srv.Requests()) != 0 {
		t.Error("gemini called the model")
	}
	save(t, "gemini", "gemini-untrusted-dir", args, res, "no --skip-trust", "")

	// The environment variable is the other documented way in.
	srv = Start(t, Script{Gemini: []Reply{Text("trusted")}})
	res = geminiRun(t, srv.URL, args, "GEMINI_CLI_TRUST_WORKSPACE=true").run(t)
	wantExit(t, res, 0)
}

func TestGeminiCLIInvalidKey(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Gemini: []Reply{Error(400, "API key not valid. Please pass a valid API key.")}})
	args := geminiArgs("--skip-trust")
	res := geminiRun(t, srv.URL, args).run(t)
	// With -o json the exit code is the HTTP status modulo 256.
	wantExit(t, res, 400%256)
	r := parseGemini(t, res.stderr)
	if r.Error == nil || r.Error.Code != 400 || !strings.Contains(r.Error.Message, "API key not valid") {
		t.Errorf("error %+v", r.Error)
	}
	save(t, "gemini", "gemini-http-400-bad-key", args, res, "server answers 400 INVALID_ARGUMENT", "")
}

func TestGeminiCLIServerError(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text"} {
		srv := Start(t, Script{Gemini: []Reply{Error(500, "fakemodel: scripted server error")}})
		args := []string{"-p", prompt, "-m", GeminiModel, "-o", format, "--skip-trust"}
		res := geminiRun(t, srv.URL, args).run(t)
		mustContain(t, "stderr", res.stderr, `Attempt 1 failed: {"error":{"code":500,"message":"fakemodel: scripted server error","status":"INTERNAL"}}. Max attempts reached`)
		if format == "json" {
			wantExit(t, res, 500%256)
			if r := parseGemini(t, res.stderr); r.Error == nil || r.Error.Code != 500 {
				t.Errorf("error %+v", r.Error)
			}
		} else {
			wantExit(t, res, 1)
		}
		if n := len(srv.ModelRequests(Gemini)); n != 1 {
			t.Errorf("%d model calls with maxAttempts 1", n)
		}
		save(t, "gemini", "gemini-http-500-"+format, args, res, "general.maxAttempts 1", "")
	}
}

func TestGeminiCLIConnectionRefused(t *testing.T) {
	t.Parallel()
	u, err := ClosedURL()
	if err != nil {
		t.Fatal(err)
	}
	args := geminiArgs("--skip-trust")
	res := geminiRun(t, u, args).run(t)
	wantExit(t, res, 1)
	if r := parseGemini(t, res.stderr); r.Error == nil || r.Error.Message != "exception TypeError: fetch failed sending request" {
		t.Errorf("error %+v", r.Error)
	}
	save(t, "gemini", "gemini-connection-refused", args, res, "GOOGLE_GEMINI_BASE_URL at a closed port", "")
}

// A model that never answers: gemini gives up by itself only after about a
// minute per attempt (rc 1, "fetch failed sending request"); a stream that
// stops mid-answer it waits on indefinitely.
func TestGeminiCLIHangAndStall(t *testing.T) {
	t.Parallel()
	skipShort(t)
	for _, tc := range []struct {
		name  string
		reply Reply
		note  string
	}{
		{"gemini-hang", Hang(), "server holds the request; gemini gives up after ~60 s with maxAttempts 1"},
		{"gemini-stall", Stall("half an ans"), "stream stops after the first chunk; gemini waits (> 150 s measured)"},
	} {
		srv := Start(t, Script{Gemini: []Reply{tc.reply}})
		args := geminiArgs("--skip-trust")
		run := geminiRun(t, srv.URL, args)
		run.limit = 20 * time.Second
		res := run.run(t)
		killedWaiting(t, srv, res)
		// gemini handles SIGTERM and exits 0: after the controller has
		// ended a session, exit 0 means nothing.
		if res.code != 0 {
			t.Errorf("exit %d (signal %q) after SIGTERM, want 0", res.code, res.signal)
		}
		save(t, "gemini", tc.name, args, res, tc.note, "")
	}
}

// Without -m, gemini first asks a small model, through the non-streaming
// generateContent, for a JSON routing verdict; a script must answer it
// (here through Script.Func) or the turn stalls.
func TestGeminiCLIRoutingCall(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{
		Gemini: appendReplies("gemini-routed"),
		Func: func(r *Request) (Reply, bool) {
			if r.Vendor == Gemini && !r.Stream {
				return Text(`{"complexity_reasoning":"a one-line append","complexity_score":1}`), true
			}
			return Reply{}, false
		},
	})
	args := []string{"-p", prompt, "-o", "json", "--skip-trust", "--policy", geminiPolicy(t)}
	res := geminiRun(t, srv.URL, args).run(t)
	wantExit(t, res, 0)
	wantLine(t, res.dir, "gemini-routed")
	var paths []string
	for _, r := range srv.ModelRequests(Gemini) {
		paths = append(paths, r.Path)
	}
	t.Logf("model calls without -m: %v", paths)
	if len(paths) < 3 || strings.HasSuffix(paths[0], ":streamGenerateContent") {
		t.Errorf("model calls %v, want a generateContent routing call first", paths)
	}
}

func TestGeminiCLIRateLimited(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{Gemini: []Reply{Error(429, "Resource has been exhausted (e.g. check quota).")}})
	args := geminiArgs("--skip-trust")
	res := geminiRun(t, srv.URL, args).run(t)
	wantExit(t, res, 429%256)
	if r := parseGemini(t, res.stderr); r.Error == nil || r.Error.Code != 429 || r.Error.Message != "Resource has been exhausted (e.g. check quota)." {
		t.Errorf("error %+v", r.Error)
	}
	save(t, "gemini", "gemini-http-429", args, res, "RESOURCE_EXHAUSTED, maxAttempts 1", "")
}
