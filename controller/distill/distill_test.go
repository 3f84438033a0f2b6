package distill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// fakeAgentOnPath builds cmd/fakeagent into the test's temporary
// directory and puts it first on PATH, where the sessions' command lookup
// finds it. The build cache keeps each build to a link.
func fakeAgentOnPath(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "fakeagent"), "../../cmd/fakeagent").CombinedOutput()
	if err != nil {
		t.Fatalf("build fakeagent: %v\n%s", err, out)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// goodBriefing is a briefing that passes the check: every section, 330 words.
func goodBriefing() string {
	var b strings.Builder
	for _, s := range briefing.Sections {
		fmt.Fprintf(&b, "## %s\n%s\n\n", s.Title, strings.TrimSpace(strings.Repeat("orders page cursor ", 22)))
	}
	return b.String()
}

// distillSetup makes a debate and a config whose agent "distiller" runs
// the fake agent with script (YAML, steps per attempt), after the shell
// snippet pre ($1 is the output file). Every prompt the agent is given is
// appended to fake/prompts.log in the debate's directory, beside the
// script and its counter: the fake's own folder, which its sandbox opens.
// The user's cache, where the distillation keeps its files, is the test's
// own.
func distillSetup(t *testing.T, script string, pre ...string) (file string, cfg *config.Config) {
	t.Helper()
	fakeAgentOnPath(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	file = filepath.Join(dir, "d.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"ann", "bob"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fake", "distiller.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := `agents:
  distiller:
    command: [sh, -c, 'printf "%s\n=====\n" "$0" >> "$2/fake/prompts.log"; ` + strings.Join(pre, "") + ` exec fakeagent --file "$1" --agent distiller --script "$2/fake/distiller.yaml" --state "$2/fake/distiller.state"', "{prompt}", "{file}", "{dir}"]
    sandbox_write: ["{dir}/fake"]
    usage: none
    timeout: 20s
    stall: 10s
    grace: 300ms
    kill_grace: 500ms
    rules:
      - match: 'Not logged in'
        outcome: auth
        detail: the distiller is not logged in
`
	cfg, err := config.Parse("walkie.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return file, cfg
}

func writeChat(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("../../briefing/testdata/claude-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "chat.jsonl")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func distillCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func prompts(t *testing.T, file string) []string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(file), "fake", "prompts.log"))
	p := strings.Split(string(b), "\n=====\n")
	return p[:len(p)-1]
}

func TestDistillWritesTheBriefingUnapproved(t *testing.T) {
	script := "behavior: write\nbody: |\n" + indent(goodBriefing())
	file, cfg := distillSetup(t, script)
	chat := writeChat(t, filepath.Dir(file))
	res, err := Run(distillCtx(t), Options{File: file, Chat: chat, Agent: "distiller", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Attempts) != 1 || res.Warning != "" || !res.Report.OK() || res.ChatFormat != briefing.FormatClaude || res.Messages != 4 {
		t.Fatalf("result %+v", res)
	}
	a := res.Attempts[0]
	if a.Ending != session.EndExited || a.ExitCode != 0 || a.Words != res.Report.Words || a.Reason != "" {
		t.Fatalf("attempt %+v", a)
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Briefing) != strings.TrimSpace(goodBriefing())+"\n" || d.Meta.BriefingSHA256 != "" {
		t.Fatalf("briefing in the file %q (pin %q)", d.Briefing, d.Meta.BriefingSHA256)
	}
	if string(res.Briefing) != string(d.Briefing) {
		t.Fatal("result and file differ")
	}
	// The session's record: the chat as the agent read it, the output, the
	// transcripts, all in a private folder of the user's cache, outside
	// the debate's folder.
	root, _ := briefing.DistilledRoot(walkie.StateDir(file, "d"))
	if !strings.HasPrefix(res.Dir, root+string(filepath.Separator)) || strings.HasPrefix(res.Dir, filepath.Dir(file)) {
		t.Fatalf("dir %s", res.Dir)
	}
	if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the distillation folder %s: %v %v", root, fi.Mode(), err)
	}
	chatText, _ := os.ReadFile(filepath.Join(res.Dir, "chat.txt"))
	want, _ := os.ReadFile("../../briefing/testdata/claude-session.txt.golden")
	if string(chatText) != string(want) {
		t.Fatalf("chat.txt:\n%s", chatText)
	}
	for _, p := range []string{a.Output, a.Transcript.Raw, a.Transcript.Text} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	// The pinned prompt names the chat and the output file, nothing else.
	ps := prompts(t, file)
	if len(ps) != 1 || ps[0] != briefing.DistillPrompt(briefing.PromptData{Chat: filepath.Join(res.Dir, "chat.txt"), Out: a.Output}) {
		t.Fatalf("prompts %q", ps)
	}
}

func TestDistillRetriesOnceWithTheReason(t *testing.T) {
	script := "behavior: write\nsteps:\n  - body: \"## Question\\nToo short.\\n\"\n  - body: |\n" + indent(indent(indent(goodBriefing())))
	file, cfg := distillSetup(t, script)
	res, err := Run(distillCtx(t), Options{File: file, Chat: writeChat(t, filepath.Dir(file)), Agent: "distiller", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Attempts) != 2 || res.Warning != "" || !res.Report.OK() {
		t.Fatalf("result %+v", res)
	}
	reason := "missing sections: Options, Constraints, Decided (not to be relitigated), What a sign-off means; 2 words, far below the 300-400 aimed at"
	if res.Attempts[0].Reason != reason || res.Attempts[1].Reason != "" {
		t.Fatalf("reasons %q, %q", res.Attempts[0].Reason, res.Attempts[1].Reason)
	}
	ps := prompts(t, file)
	if len(ps) != 2 || strings.Contains(ps[0], "sent back") || !strings.Contains(ps[1], "A first attempt was sent back: "+reason+".") {
		t.Fatalf("prompts:\n%s", strings.Join(ps, "\n-----\n"))
	}
}

func TestDistillKeepsAPoorResultWithAWarning(t *testing.T) {
	file, cfg := distillSetup(t, "behavior: write\nbody: \"# Briefing\\n\\n## Question\\nOnly this.\\n\"\n")
	res, err := Run(distillCtx(t), Options{File: file, Chat: writeChat(t, filepath.Dir(file)), Agent: "distiller", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Attempts) != 2 || res.Warning == "" || !strings.Contains(res.Warning, "missing sections: Options") {
		t.Fatalf("result %+v", res)
	}
	// The agent's own "# Briefing" title is dropped: the record has one.
	if d, _ := walkie.Load(file); string(d.Briefing) != "## Question\nOnly this.\n" {
		t.Fatalf("briefing %q", d.Briefing)
	}
}

func TestDistillWithoutOutputFails(t *testing.T) {
	file, cfg := distillSetup(t, "behavior: none\n")
	before, _ := os.ReadFile(file)
	res, err := Run(distillCtx(t), Options{File: file, Chat: writeChat(t, filepath.Dir(file)), Agent: "distiller", Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "wrote no briefing in 2 attempts") {
		t.Fatalf("err %v", err)
	}
	if len(res.Attempts) != 2 || !strings.HasPrefix(res.Attempts[1].Reason, "the agent did not write ") {
		t.Fatalf("attempts %+v", res.Attempts)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatal("the file changed")
	}
}

// A CLI that hangs after writing is ended once the file has been quiet
// for the grace, and its result is used.
func TestDistillEndsAnAgentThatHangsAfterWriting(t *testing.T) {
	file, cfg := distillSetup(t, "behavior: write\nhang_after: true\nbody: |\n"+indent(goodBriefing()))
	start := time.Now()
	res, err := Run(distillCtx(t), Options{File: file, Chat: writeChat(t, filepath.Dir(file)), Agent: "distiller", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Attempts[0]
	if len(res.Attempts) != 1 || a.Ending != session.EndCaller || a.EndedBy != session.EndedByController || a.Detail != "the briefing is written" {
		t.Fatalf("attempts %+v", res.Attempts)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("took %v", el)
	}
}

func TestDistillStopsOnABlockedPrompt(t *testing.T) {
	// fakeagent reads its --file first; a real CLI would not care.
	file, cfg := distillSetup(t, "behavior: not-logged-in\n", `: > "$1";`)
	res, err := Run(distillCtx(t), Options{File: file, Chat: writeChat(t, filepath.Dir(file)), Agent: "distiller", Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "the distiller is not logged in") || len(res.Attempts) != 1 {
		t.Fatalf("err %v, attempts %+v", err, res.Attempts)
	}
}

func TestDistillReplacingAnApprovedBriefingUnpinsIt(t *testing.T) {
	file, cfg := distillSetup(t, "behavior: write\nbody: |\n"+indent(goodBriefing()))
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	res, err := Run(distillCtx(t), Options{File: file, Chat: writeChat(t, filepath.Dir(file)), Agent: "distiller", Config: cfg})
	if err != nil || !res.Unpinned {
		t.Fatalf("unpinned=%v err=%v", res.Unpinned, err)
	}
	if m, _ := walkie.ReadMeta(file); m.BriefingSHA256 != "" {
		t.Fatal("still pinned")
	}
}

func TestDistillRefusals(t *testing.T) {
	file, cfg := distillSetup(t, "behavior: write\nbody: x\n")
	chat := writeChat(t, filepath.Dir(file))
	empty := filepath.Join(filepath.Dir(file), "empty.txt")
	os.WriteFile(empty, nil, 0o644)
	for name, o := range map[string]Options{
		"unknown agent":  {File: file, Chat: chat, Agent: "nobody", Config: cfg},
		"missing chat":   {File: file, Chat: chat + ".missing", Agent: "distiller", Config: cfg},
		"empty chat":     {File: file, Chat: empty, Agent: "distiller", Config: cfg},
		"missing record": {File: file + ".missing", Chat: chat, Agent: "distiller", Config: cfg},
	} {
		if _, err := Run(distillCtx(t), o); !errors.Is(err, engine.ErrBadInput) {
			t.Errorf("%s: %v, want engine.ErrBadInput", name, err)
		}
	}
	// While a controller runs the debate, no agent is started.
	m, _ := walkie.ReadMeta(file)
	lock, err := walkie.TryRunLock(walkie.StateDir(file, m.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(distillCtx(t), Options{File: file, Chat: chat, Agent: "distiller", Config: cfg}); !errors.Is(err, walkie.ErrLocked) {
		t.Errorf("with a controller running: %v", err)
	}
	lock.Unlock()
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Append(file, walkie.Post{From: "ann", Body: []byte("turn one")}); err != nil {
		t.Fatal(err)
	}
	_, err = Run(distillCtx(t), Options{File: file, Chat: chat, Agent: "distiller", Config: cfg})
	if !errors.Is(err, ErrBriefingFixed) {
		t.Fatalf("after the first turn: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(file), "fake", "prompts.log")); err == nil {
		t.Fatal("an agent ran")
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

// The chat a distillation read never reaches a turn (issue 13: it lay
// under .walkie/ID/distill/ in the agents' working directory): it is kept
// outside the debate's folder while the briefing awaits approval, and the
// approval that lets turns run removes it. A turn then looks for it by its
// path and under its working directory, and finds nothing.
func TestTurnCannotOpenTheChat(t *testing.T) {
	script := "behavior: write\nbody: |\n" + indent(goodBriefing())
	file, cfg := distillSetup(t, script)
	dir := filepath.Dir(file)
	res, err := Run(distillCtx(t), Options{File: file, Chat: writeChat(t, t.TempDir()), Agent: "distiller", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	chatPath := filepath.Join(res.Dir, "chat.txt")
	const secret = "Keyset pagination on (created_at, id)"
	if b, err := os.ReadFile(chatPath); err != nil || !strings.Contains(string(b), secret) {
		t.Fatalf("the distillation's chat %s: %v", chatPath, err)
	}
	// Nothing under the debate's folder holds any of it, transcripts
	// included.
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), secret) {
				t.Errorf("%s holds the chat", p)
			}
		}
		return nil
	})
	// ann's turn tries to read the chat where the distillation kept it,
	// and anything named like it under its working directory, and writes
	// what it found into its turn.
	look := fmt.Sprintf(`found=$(cat %q 2>&1; find . -name "chat*" -exec cat {} + 2>&1); printf "\n## Turn 1 · ann\n\nI looked: %%s\n" "$(printf "%%s" "$found" | tr "\n" " ")" >> "$1"`, chatPath)
	ann := config.Agent{Name: "ann", Command: []string{"sh", "-c", look, "sh", "{file}"}, Usage: config.UsageNone, EnvAllow: config.DefaultEnvAllow,
		Dir: config.DefaultDir, Prompt: config.DefaultPrompt, Home: config.HomeInherit,
		Timing: config.Timing{Timeout: 20 * time.Second, Grace: 100 * time.Millisecond, KillGrace: 500 * time.Millisecond}}
	cfg.Agents["ann"] = ann
	sum, err := controller.Run(distillCtx(t), controller.Options{File: file, Config: cfg, Approve: true, Once: true})
	if err != nil || sum.Turns != 1 {
		t.Fatalf("%+v, %v", sum, err)
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	body := string(d.Entries[0].Body)
	if strings.Contains(body, secret) || !strings.Contains(body, "No such file") {
		t.Errorf("the turn found the chat, or did not look:\n%s", body)
	}
	if _, err := os.Stat(res.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the distillation's folder is left after approval: %v", err)
	}
}

// An agent that leaves a gibibyte where the briefing goes (sparse: no
// disk) is sent back with the reason, and walkie reads no further than a
// briefing may hold.
func TestDistillRefusesAHugeBriefingUnread(t *testing.T) {
	file, cfg := distillSetup(t, "behavior: none\n", `truncate -s 1G "$1";`)
	before, _ := os.ReadFile(file)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	res, err := Run(distillCtx(t), Options{File: file, Chat: writeChat(t, filepath.Dir(file)), Agent: "distiller", Config: cfg})
	runtime.ReadMemStats(&m1)
	if err == nil || !strings.Contains(err.Error(), "wrote no briefing in 2 attempts") {
		t.Fatalf("err %v", err)
	}
	for _, a := range res.Attempts {
		if !strings.Contains(a.Reason, "over the limit of 262144; walkie read no further") {
			t.Errorf("attempt %d: reason %q, want the limit", a.Number, a.Reason)
		}
	}
	if n := m1.TotalAlloc - m0.TotalAlloc; n > 64<<20 {
		t.Errorf("allocated %d MiB to refuse it", n>>20)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatal("the record changed")
	}
}
