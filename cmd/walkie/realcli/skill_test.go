//go:build linux

package realcli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/walkie"
)

// The briefing the scripted agent writes from "the conversation" and shows
// the person, who approves it as it is.
const skillBriefing = `## Question
Should GET /v1/orders paginate with cursors or with offsets?

## Options
1. Offsets: page and per_page.
2. Cursors: an opaque cursor of the last (created_at, id).

## Constraints
- Orders arrive during checkout while clients page.

## Decided (not to be relitigated)
- No total count.

## What a sign-off means
You would ship the proposal as it stands in the last turn.`

// The walkie-debate skill, installed with walkie skill install, is offered
// to the real claude (its description is in the model request); when the
// model invokes it, claude reads the skill's instructions, and the walkie
// commands the agent then runs create nothing before the person approves
// and, once they have, create and approve exactly the briefing they saw and
// run the debate to its end.
func TestSkillWithRealClaude(t *testing.T) {
	need(t)
	dir, home := t.TempDir(), t.TempDir()
	tools := fakeagentBin(t)
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("walkie.yaml", "defaults: {timeout: 1m, stall: 30s, grace: 300ms}\nagents:\n"+
		"  ann: {command: [fakeagent, --file, \"{file}\", --agent, \"{agent}\", --sign], usage: none}\n"+
		"  bob: {command: [fakeagent, --file, \"{file}\", --agent, \"{agent}\", --sign], usage: none}\n")
	path := strings.Join([]string{filepath.Dir(bin), tools, clis, os.Getenv("PATH")}, string(os.PathListSeparator))
	env := []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + t.TempDir(), "LANG=C.UTF-8", "GORACE=atexit_sleep_ms=0"}

	install := exec.Command(bin, "skill", "install", "--claude", "--project")
	install.Dir, install.Env = dir, env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("skill install: %v\n%s", err, out)
	}
	skill, err := os.ReadFile(filepath.Join(dir, ".claude", "skills", "walkie-debate", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	description := frontMatterValue(string(skill), "description")

	srv := modelserver.Start(t, modelserver.Script{Anthropic: []modelserver.Reply{
		// The person asked; the model picks the skill.
		modelserver.Tool("Skill", map[string]any{"skill": "walkie-debate"}),
		// Having read it: the briefing, from the conversation, into a file…
		modelserver.Shell("cat > .walkie-briefing.md <<'EOF'\n" + skillBriefing + "\nEOF"),
		// …shown to the person, and the turn ends: step 3.
		modelserver.Text("Here is the briefing for orders.walkie.md (ann, bob, 2 rounds):\n\n" + skillBriefing + "\n\nApprove it, or tell me what to change."),
		// The person approved: step 4, then the debate (in the foreground
		// here, so that the test sees its end).
		modelserver.Shell("walkie init orders.walkie.md --agents ann,bob --max-rounds 2 --briefing .walkie-briefing.md && walkie brief approve orders.walkie.md --yes"),
		modelserver.Shell("walkie auto orders.walkie.md --json > orders.result.json 2> orders.log"),
		modelserver.Text("The debate converged."),
	}})
	claude := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(clis, "claude"), append(args, "--output-format", "json", "--permission-mode", "acceptEdits", "--allowedTools", "Bash", "Skill")...)
		cmd.Dir, cmd.Env = dir, append(append([]string{}, env...), modelserver.ClaudeEnv(srv.URL)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	claude("-p", "Let's debate cursor versus offset pagination for GET /v1/orders with ann and bob.")
	reqs := srv.ModelRequests(modelserver.Anthropic)
	if len(reqs) != 3 {
		t.Fatalf("%d model calls in the first exchange, want 3", len(reqs))
	}
	if !reqs[0].HasText("walkie-debate: " + description) {
		t.Errorf("the skill's description was not offered to the model")
	}
	if !reqs[1].HasText("Show it and wait for approval") || !reqs[1].HasText("walkie brief approve NAME.walkie.md --yes") {
		t.Errorf("the model did not get the skill's instructions after invoking it")
	}
	if _, err := os.Stat(filepath.Join(dir, "orders.walkie.md")); !os.IsNotExist(err) {
		t.Fatalf("a debate exists before the person approved (%v)", err)
	}

	claude("-p", "--continue", "Yes, approved as it stands. Start it.")
	reqs = srv.ModelRequests(modelserver.Anthropic)
	if len(reqs) != 6 || !reqs[3].HasText("Yes, approved as it stands.") {
		t.Fatalf("%d model calls in all, want 6, the fourth after the approval", len(reqs))
	}
	d, err := walkie.Load(filepath.Join(dir, "orders.walkie.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(d.Briefing)); got != skillBriefing {
		t.Errorf("the debate's briefing is not the one the person approved:\n%s", got)
	}
	if d.Meta.BriefingSHA256 != walkie.BriefingHash(d.Briefing) {
		t.Errorf("the briefing is not approved: pin %q", d.Meta.BriefingSHA256)
	}
	var res struct {
		Status, Record string
		Agreed         []struct{ Agent string }
	}
	b, err := os.ReadFile(filepath.Join(dir, "orders.result.json"))
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil || res.Status != walkie.StatusConverged || res.Record != filepath.Join(dir, "orders.walkie.md") || len(res.Agreed) != 2 {
		log, _ := os.ReadFile(filepath.Join(dir, "orders.log"))
		t.Errorf("the debate's result: %+v, %v\n%s\n%s", res, err, b, log)
	}
}

// frontMatterValue is a key's value in a SKILL.md's front matter.
func frontMatterValue(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, key+": "); ok {
			return v
		}
	}
	return ""
}

// fakeagentBin builds the scripted fake agent into a folder of its own.
func fakeagentBin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := blackbox.Build(dir, blackbox.FakeAgent); err != nil {
		t.Fatal(err)
	}
	return dir
}
