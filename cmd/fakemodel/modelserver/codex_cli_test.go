//go:build linux

package modelserver

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// codex exec as walkie's preset runs it: the workspace-write sandbox lets
// commands write under the working directory (and /tmp) only; approvals
// are "never" in exec mode, so nothing waits for a person. The walkie
// folder need not be a git repository, hence --skip-git-repo-check.
var codexArgs = []string{"exec", "--json", "--skip-git-repo-check", "-s", "workspace-write", prompt}

func codexRun(t *testing.T, srvURL string, args []string, extraEnv ...string) cliRun {
	t.Helper()
	bin := sessiontest.RealCLI(t, "codex")
	env, err := WriteCodexHome(t.TempDir(), srvURL)
	if err != nil {
		t.Fatal(err)
	}
	return cliRun{bin: bin, args: args, env: append(env, extraEnv...)}
}

// codexEvent is one line of `codex exec --json`.
type codexEvent struct {
	Type  string `json:"type"`
	Usage *struct {
		InputTokens       int `json:"input_tokens"`
		CachedInputTokens int `json:"cached_input_tokens"`
		OutputTokens      int `json:"output_tokens"`
	} `json:"usage"`
	Item *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Command  string `json:"command"`
		ExitCode *int   `json:"exit_code"`
	} `json:"item"`
	Message string `json:"message"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func parseCodex(t *testing.T, stdout string) []codexEvent {
	t.Helper()
	var evs []codexEvent
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var e codexEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("codex --json line %q: %v", line, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// lastCodex returns the last event of the given type, or nil.
func lastCodex(evs []codexEvent, typ string) *codexEvent {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			return &evs[i]
		}
	}
	return nil
}

func TestCodexCLIAppendsTurn(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{OpenAI: appendReplies("codex-was-here")})
	res := codexRun(t, srv.URL, codexArgs).run(t)
	wantExit(t, res, 0)
	wantLine(t, res.dir, "codex-was-here")
	if !srv.Saw(prompt) {
		t.Error("the prompt never reached the model")
	}
	reqs := srv.ModelRequests(OpenAI)
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), `"function_call_output"`) {
		t.Errorf("%d model calls; the second should carry the function_call_output", len(reqs))
	}
	evs := parseCodex(t, res.stdout)
	done := lastCodex(evs, "turn.completed")
	u := DefaultUsage
	if done == nil || done.Usage == nil || done.Usage.InputTokens != 2*u.InputTokens || done.Usage.OutputTokens != 2*u.OutputTokens {
		t.Fatalf("turn.completed %+v", done)
	}
	var ran bool
	for _, e := range evs {
		if e.Type == "item.completed" && e.Item.Type == "command_execution" && e.Item.ExitCode != nil && *e.Item.ExitCode == 0 {
			ran = true
		}
	}
	if !ran {
		t.Error("no successful command_execution item")
	}
	save(t, "codex", "codex-ok", codexArgs, res, "-s workspace-write", "codex-events.jsonl")

	// The human-readable form, for transcripts.
	srv = Start(t, Script{OpenAI: appendReplies("codex-text")})
	args := []string{"exec", "--skip-git-repo-check", "-s", "workspace-write", prompt}
	res = codexRun(t, srv.URL, args).run(t)
	wantExit(t, res, 0)
	wantLine(t, res.dir, "codex-text")
	mustContain(t, "stderr", res.stderr, "tokens used")
	save(t, "codex", "codex-ok-text", args, res, "", "")
}

// The read-only sandbox (reviewer mode, and codex exec's default): the
// command runs but cannot write, and codex still exits 0.
func TestCodexCLIReadOnly(t *testing.T) {
	t.Parallel()
	for _, mode := range [][]string{{"-s", "read-only"}, nil} {
		srv := Start(t, Script{OpenAI: appendReplies("must-not-appear")})
		args := append(append([]string{"exec", "--json", "--skip-git-repo-check"}, mode...), prompt)
		res := codexRun(t, srv.URL, args).run(t)
		wantExit(t, res, 0)
		wantNoFile(t, res.dir)
		if reqs := srv.ModelRequests(OpenAI); len(reqs) != 2 || !strings.Contains(string(reqs[1].Raw), "Read-only file system") {
			t.Errorf("%v: the tool result should report the read-only file system", mode)
		}
	}
}

func TestCodexCLIOutsideGitRepo(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{OpenAI: appendReplies("x")})
	args := []string{"exec", "--json", "-s", "workspace-write", prompt}
	res := codexRun(t, srv.URL, args).run(t)
	wantExit(t, res, 1)
	mustContain(t, "stderr", res.stderr, "Not inside a trusted directory and --skip-git-repo-check was not specified.")
	if len(srv.Requests()) != 0 {
		t.Error("codex called the model")
	}
	save(t, "codex", "codex-untrusted-dir", args, res, "working dir outside a git repo, no --skip-git-repo-check", "")

	// Inside a git repository the same flags work.
	if _, err := exec.LookPath("git"); err != nil {
		return
	}
	srv = Start(t, Script{OpenAI: appendReplies("in-git")})
	run := codexRun(t, srv.URL, args)
	run.dir = t.TempDir()
	if out, err := exec.Command("git", "init", "-q", run.dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	res = run.run(t)
	wantExit(t, res, 0)
	wantLine(t, run.dir, "in-git")
}

func TestCodexCLIMissingKey(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{})
	args := []string{"exec", "--json", "--skip-git-repo-check", prompt}
	run := codexRun(t, srv.URL, args)
	run.env = run.env[:1] // CODEX_HOME only: the provider's key is unset
	res := run.run(t)
	wantExit(t, res, 1)
	failed := lastCodex(parseCodex(t, res.stdout), "turn.failed")
	if failed == nil || failed.Error == nil || failed.Error.Message != "Missing environment variable: `FAKE_API_KEY`." {
		t.Errorf("turn.failed %+v", failed)
	}
	save(t, "codex", "codex-missing-key", args, res, "provider env_key variable unset", "")
}

func TestCodexCLIInvalidKey(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{OpenAI: []Reply{Error(401, "Incorrect API key provided")}})
	args := []string{"exec", "--json", "--skip-git-repo-check", prompt}
	res := codexRun(t, srv.URL, args).run(t)
	wantExit(t, res, 1)
	failed := lastCodex(parseCodex(t, res.stdout), "turn.failed")
	if failed == nil || failed.Error == nil || !strings.HasPrefix(failed.Error.Message, "unexpected status 401 Unauthorized: Incorrect API key provided") {
		t.Errorf("turn.failed %+v", failed)
	}
	save(t, "codex", "codex-http-401", args, res, "", "")
}

func TestCodexCLIServerError(t *testing.T) {
	t.Parallel()
	for _, json := range []bool{true, false} {
		srv := Start(t, Script{OpenAI: []Reply{Error(500, "fakemodel: scripted server error")}})
		args := []string{"exec", "--skip-git-repo-check", prompt}
		name := "codex-http-500-text"
		if json {
			args = append([]string{"exec", "--json"}, args[1:]...)
			name = "codex-http-500-json"
		}
		res := codexRun(t, srv.URL, args).run(t)
		wantExit(t, res, 1)
		// codex shows its own text for 5xx, not the body's message.
		mustContain(t, "output", res.stdout+res.stderr, "We’re currently experiencing high demand, which may cause temporary errors.")
		if n := len(srv.ModelRequests(OpenAI)); n != 1 {
			t.Errorf("%d model calls with retries off, want 1", n)
		}
		if res.dur > 20*time.Second {
			t.Errorf("took %v with retries off", res.dur)
		}
		save(t, "codex", name, args, res, "request_max_retries=0 stream_max_retries=0", "")
	}
}

// No server at all: codex does not give up, retries off or not; it prints
// "Reconnecting... waiting for network" every few seconds, forever.
func TestCodexCLIConnectionRefused(t *testing.T) {
	t.Parallel()
	skipShort(t)
	u, err := ClosedURL()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"exec", "--json", "--skip-git-repo-check", prompt}
	run := codexRun(t, u, args)
	run.limit = 20 * time.Second
	res := run.run(t)
	killedWaiting(t, nil, res)
	mustContain(t, "stdout", res.stdout, `"Reconnecting... waiting for network (Connection failed: error sending request)"`)
	save(t, "codex", "codex-connection-refused", args, res, "base_url at a closed port; codex never exits by itself", "")
}

// A model that never answers: codex waits silently, with no timeout of its
// own before the response headers.
func TestCodexCLIHang(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := Start(t, Script{OpenAI: []Reply{Hang()}})
	args := []string{"exec", "--json", "--skip-git-repo-check", prompt}
	run := codexRun(t, srv.URL, args)
	run.limit = 15 * time.Second
	res := run.run(t)
	killedWaiting(t, srv, res)
	// The node launcher dies of the signal rather than handling it.
	if res.signal != "terminated" {
		t.Errorf("exit %d (signal %q) after SIGTERM, want death by SIGTERM", res.code, res.signal)
	}
	if evs := parseCodex(t, res.stdout); len(evs) != 2 || evs[1].Type != "turn.started" {
		t.Errorf("events while waiting: %+v", evs)
	}
	save(t, "codex", "codex-hang", args, res, "server holds the request; no output after turn.started", "")
}

// A stream that stops mid-answer: stream_idle_timeout_ms (default five
// minutes) ends it with turn.failed.
func TestCodexCLIStall(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{OpenAI: []Reply{Stall("half an ans")}})
	args := []string{"exec", "--json", "--skip-git-repo-check", "-c", "model_providers.fake.stream_idle_timeout_ms=3000", prompt}
	res := codexRun(t, srv.URL, args).run(t)
	wantExit(t, res, 1)
	failed := lastCodex(parseCodex(t, res.stdout), "turn.failed")
	if failed == nil || failed.Error == nil || failed.Error.Message != "stream disconnected before completion: idle timeout waiting for SSE" {
		t.Errorf("turn.failed %+v", failed)
	}
	save(t, "codex", "codex-stall-idle-timeout", args, res, "stream_idle_timeout_ms=3000", "")
}

func TestCodexCLILoginStatus(t *testing.T) {
	t.Parallel()
	bin := sessiontest.RealCLI(t, "codex")
	home := t.TempDir()
	res := cliRun{bin: bin, args: []string{"login", "status"}, env: []string{"CODEX_HOME=" + home}}.run(t)
	wantExit(t, res, 1)
	mustContain(t, "stderr", res.stderr, "Not logged in")
	save(t, "codex", "codex-login-status-none", []string{"login", "status"}, res, "empty CODEX_HOME: how doctor can tell", "")
}

func TestCodexCLIRateLimited(t *testing.T) {
	t.Parallel()
	srv := Start(t, Script{OpenAI: []Reply{Error(429, "Rate limit reached")}})
	args := []string{"exec", "--json", "--skip-git-repo-check", prompt}
	res := codexRun(t, srv.URL, args).run(t)
	wantExit(t, res, 1)
	failed := lastCodex(parseCodex(t, res.stdout), "turn.failed")
	if failed == nil || failed.Error == nil || failed.Error.Message != "exceeded retry limit, last status: 429 Too Many Requests" {
		t.Errorf("turn.failed %+v", failed)
	}
	save(t, "codex", "codex-http-429", args, res, "request_max_retries=0", "")
}
