//go:build linux

package realcli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
)

// The real claude finds walkie mcp where walkie skill install registered
// it (the user's ~/.claude.json), starts it, offers its tools to the model,
// and, when the model calls one, calls walkie's tool and hands the answer
// back: the standing of the debate, as get_standing gives it.
func TestMCPWithRealClaude(t *testing.T) {
	need(t)
	defer takeSlot(t)()
	dir, home := t.TempDir(), t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("walkie.yaml", "agents:\n  ann: {command: [\"true\"], usage: none}\n  bob: {command: [\"true\"], usage: none}\n")
	write("brief.md", "Should GET /v1/orders paginate with cursors or with offsets?\n")
	path := strings.Join([]string{filepath.Dir(bin), clis, os.Getenv("PATH")}, string(os.PathListSeparator))
	env := []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + t.TempDir(), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"LANG=C.UTF-8", "GORACE=atexit_sleep_ms=0"}
	walkie := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("walkie %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	walkie("init", "orders.walkie.md", "--agents", "ann,bob", "--max-rounds", "2", "--briefing", "brief.md")
	if out := walkie("skill", "install", "--claude", "--user"); !strings.Contains(out, "Claude Code: walkie mcp registered in "+filepath.Join(home, ".claude.json")) {
		t.Fatalf("skill install:\n%s", out)
	}

	srv := modelserver.Start(t, modelserver.Script{Anthropic: []modelserver.Reply{
		modelserver.Tool("mcp__walkie__get_standing", map[string]any{"file": "orders.walkie.md"}),
		modelserver.Text("The orders debate is open; its briefing waits for approval."),
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(clis, "claude"), "-p", "Where does the orders debate stand?", "--output-format", "json",
		"--allowedTools", "mcp__walkie__get_standing")
	cmd.Dir, cmd.Env = dir, append(append([]string{}, env...), modelserver.ClaudeEnv(srv.URL)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	reqs := srv.ModelRequests(modelserver.Anthropic)
	if len(reqs) < 2 {
		t.Fatalf("%d model calls, want the tool call and the answer after it\n%s", len(reqs), out)
	}
	for _, tool := range []string{"mcp__walkie__get_standing", "mcp__walkie__start_debate", "mcp__walkie__wait_for_turn"} {
		if !reqs[0].HasText(tool) {
			t.Errorf("claude did not offer %s to the model", tool)
		}
	}
	// The tool's answer, in the request after the call: the standing.
	answer := reqs[len(reqs)-1]
	for _, want := range []string{`"status":"open"`, `"participants":["ann","bob"]`, `"briefing_approved":false`, filepath.Join(dir, "orders.walkie.md")} {
		if !answer.HasText(want) {
			t.Errorf("the tool's answer lacks %s:\n%s", want, answer.Raw)
		}
	}
}
