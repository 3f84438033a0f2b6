//go:build linux

package distill

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// realCLI returns the CLI installed by scripts/install-clis.sh, or skips
// the test saying how to get it.
func realCLI(t *testing.T, name string) string {
	t.Helper()
	bin := sessiontest.RealCLI(t, name)
	if testing.Short() {
		t.Skip("slow: real CLI sessions")
	}
	return bin
}

// runCLI runs a real CLI once, outside walkie, the way a person chats with
// it: in dir, with env laid over a minimal environment, stdin closed.
func runCLI(t *testing.T, dir string, env []string, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// findLog returns the one file under root whose name matches pattern.
func findLog(t *testing.T, root, pattern string) string {
	t.Helper()
	var found []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if ok, _ := filepath.Match(pattern, d.Name()); ok {
				found = append(found, p)
			}
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("want one %s under %s, found %v", pattern, root, found)
	}
	return found[0]
}

const (
	chatQuestion = "How should GET /v1/orders paginate while checkout keeps inserting orders?"
	chatAnswer   = "Keyset pagination on (created_at, id) stays stable under inserts; offsets skip or repeat rows."
	chatFollowUp = "Keep page numbers for the admin screens?"
	chatAnswer2  = "Only there; the public API gets the cursor, and page returns 400."
)

var (
	chatPathRe = regexp.MustCompile(`(/\S+/distill/\S+/chat\.txt)`)
	outPathRe  = regexp.MustCompile(`(/\S+/distill/\S+/briefing-(\d)\.md)`)
)

// The whole path with the real claude CLI, talking to the fake model
// server: a person's chat with claude leaves a session log; walkie brief
// distill reads it, and a second claude, run by walkie as a normal
// session, reads the chat with its Read tool and writes the briefing with
// its Write tool. Its first briefing is too short and is sent back; the
// second is kept.
func TestDistillWithRealClaude(t *testing.T) {
	claude := realCLI(t, "claude")
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // where the distillation keeps the chat
	var mu sync.Mutex
	var distillPrompts []string // the attempt number of each distill session's first call
	srv := modelserver.Start(t, modelserver.Script{Func: func(r *modelserver.Request) (modelserver.Reply, bool) {
		raw := string(r.Raw)
		if !r.HasText("You are writing the briefing of a written debate") {
			// The person's own chat: answer the question, then the follow-up.
			if r.HasText(chatFollowUp) {
				return modelserver.Text(chatAnswer2), true
			}
			return modelserver.Text(chatAnswer), true
		}
		chat, out := chatPathRe.FindStringSubmatch(raw), outPathRe.FindStringSubmatch(raw)
		if chat == nil || out == nil {
			return modelserver.Text("The prompt names no chat or output file."), true
		}
		switch strings.Count(raw, `"tool_result"`) {
		case 0:
			mu.Lock()
			distillPrompts = append(distillPrompts, out[2])
			mu.Unlock()
			return modelserver.Tool("Read", map[string]any{"file_path": chat[1]}), true
		case 1:
			body := "## Question\nHow should GET /v1/orders paginate?\n"
			if out[2] == "2" {
				body = goodBriefing()
			}
			return modelserver.Tool("Write", map[string]any{"file_path": out[1], "content": body}), true
		}
		return modelserver.Text("The briefing is written."), true
	}})
	env := modelserver.ClaudeEnv(srv.URL)

	// 1. The person's chat, kept by claude as a session log in its HOME.
	home, chatDir := t.TempDir(), t.TempDir()
	chatEnv := append([]string{"HOME=" + home}, env...)
	runCLI(t, chatDir, chatEnv, claude, "-p", chatQuestion)
	runCLI(t, chatDir, chatEnv, claude, "-p", "--continue", chatFollowUp)
	chatLog := findLog(t, filepath.Join(home, ".claude", "projects"), "*.jsonl")

	// 2. walkie brief distill with claude as walkie runs it.
	dir := t.TempDir()
	file := filepath.Join(dir, "orders.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"claude", "codex"}}); err != nil {
		t.Fatal(err)
	}
	var envYAML strings.Builder
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&envYAML, "      %s: %q\n", k, v)
	}
	cfg, err := config.Parse("walkie.yaml", []byte(fmt.Sprintf(`agents:
  claude:
    command: [%s, -p, "{prompt}", --output-format, json, --permission-mode, acceptEdits, --allowedTools, "Read,Grep,Glob,Edit,Write,Bash(cat:*),Bash(printf:*)", --no-session-persistence]
    usage: claude-json
    timeout: 2m
    stall: 90s
    grace: 1s
    env:
%s`, claude, envYAML.String())))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{File: file, Chat: chatLog, Config: cfg}) // the first participant's agent: claude
	if err != nil {
		t.Fatalf("%v\nattempts %+v", err, res.Attempts)
	}

	// The log gave the two questions and the two answers, nothing else.
	if res.ChatFormat != briefing.FormatClaude || res.Messages != 4 {
		t.Fatalf("chat %s with %d messages", res.ChatFormat, res.Messages)
	}
	chatText, _ := os.ReadFile(filepath.Join(res.Dir, "chat.txt"))
	want := "USER:\n" + chatQuestion + "\n\nASSISTANT:\n" + chatAnswer + "\n\nUSER:\n" + chatFollowUp + "\n\nASSISTANT:\n" + chatAnswer2 + "\n"
	if string(chatText) != want {
		t.Fatalf("chat.txt:\n%s", chatText)
	}
	// claude really read it: the chat came back to the model as a tool result.
	sawChat := false
	for _, r := range srv.ModelRequests(modelserver.Anthropic) {
		sawChat = sawChat || (r.HasText("You are writing the briefing") && r.HasText(chatAnswer2) && strings.Contains(string(r.Raw), `"tool_result"`))
	}
	if !sawChat {
		t.Error("no distill request carried the chat as a tool result")
	}
	// Two sessions: the short briefing was sent back with the reason.
	mu.Lock()
	sessions := fmt.Sprint(distillPrompts)
	mu.Unlock()
	if len(res.Attempts) != 2 || sessions != "[1 2]" {
		t.Fatalf("attempts %+v, sessions %v", res.Attempts, sessions)
	}
	if !strings.HasPrefix(res.Attempts[0].Reason, "missing sections: Options") || res.Attempts[1].Reason != "" || res.Warning != "" {
		t.Fatalf("reasons %q / %q, warning %q", res.Attempts[0].Reason, res.Attempts[1].Reason, res.Warning)
	}
	retried := false
	for _, r := range srv.ModelRequests(modelserver.Anthropic) {
		retried = retried || r.HasText("A first attempt was sent back: missing sections: Options")
	}
	if !retried {
		t.Error("the second session's prompt does not carry the reason")
	}
	for _, a := range res.Attempts {
		if a.Ending != session.EndExited && a.Ending != session.EndCaller {
			t.Errorf("attempt %d ended %s (%s)", a.Number, a.Ending, a.Detail)
		}
		if a.Usage == nil || a.Usage.CostSource != "reported" || a.Usage.InputTokens == 0 {
			t.Errorf("attempt %d usage %+v", a.Number, a.Usage)
		}
		if b, err := os.ReadFile(a.Transcript.Text); err != nil || !strings.Contains(string(b), "total_cost_usd") {
			t.Errorf("attempt %d transcript: %v", a.Number, err)
		}
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Briefing) != strings.TrimSpace(goodBriefing())+"\n" || d.Meta.BriefingSHA256 != "" {
		t.Fatalf("briefing %q, pin %q", d.Briefing, d.Meta.BriefingSHA256)
	}
}

// The real codex CLI's session log (a rollout under $CODEX_HOME/sessions)
// from a two-message chat parses to exactly those messages.
func TestRealCodexSessionLogParses(t *testing.T) {
	codex := realCLI(t, "codex")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := modelserver.Start(t, modelserver.Script{OpenAI: []modelserver.Reply{
		{Text: "Looking at the schema first.", Command: "echo 'orders: id, created_at'"},
		modelserver.Text(chatAnswer),
		modelserver.Text(chatAnswer2),
	}})
	codexHome := t.TempDir()
	env, err := modelserver.WriteCodexHome(codexHome, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	env = append(env, "HOME="+t.TempDir())
	dir := t.TempDir()
	runCLI(t, dir, env, codex, "exec", "--skip-git-repo-check", "-s", "workspace-write", chatQuestion)
	runCLI(t, dir, env, codex, "exec", "--skip-git-repo-check", "-s", "workspace-write", "resume", "--last", chatFollowUp)
	rollout := findLog(t, filepath.Join(codexHome, "sessions"), "rollout-*.jsonl")
	b, err := os.ReadFile(rollout)
	if err != nil {
		t.Fatal(err)
	}
	c, err := briefing.ParseChat(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []briefing.Message{
		{Role: briefing.RoleUser, Text: chatQuestion},
		{Role: briefing.RoleAssistant, Text: "Looking at the schema first.\n\n" + chatAnswer},
		{Role: briefing.RoleUser, Text: chatFollowUp},
		{Role: briefing.RoleAssistant, Text: chatAnswer2},
	}
	if c.Format != briefing.FormatCodex || fmt.Sprintf("%q", c.Messages) != fmt.Sprintf("%q", want) {
		t.Fatalf("%s: %q", c.Format, c.Messages)
	}
}
