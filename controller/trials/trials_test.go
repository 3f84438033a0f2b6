package trials_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/controller/trials"
	"github.com/walkie-sh/walkie/walkie"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// block is a verdict blocking on input.
func block(input string) string {
	return fmt.Sprintf(`'{"verdict": "request_changes", "objections": [{"summary": "s", "rule": "§1", "failing_input": %q, "blocking": true}]}'`, input)
}

const approve = `'{"verdict": "approve", "objections": []}'`

// Five trials of one round table whose scripted agents behave by the
// copy's id: trial 1 converges in round 1, 2 in round 2, 3 in round 3;
// the grader fails every round of trial 4, which reaches the cap; in
// trial 5 the implementer pleases whoever objected last and the reviewers
// take turns blocking on a lone newline, a deadlock. The distribution
// printed is the golden file's, and the same again from the copies alone.
func TestTrialsFive(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, ignore)
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "fakeagent")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/fakeagent").CombinedOutput(); err != nil {
		t.Fatalf("build fakeagent: %v\n%s", err, out)
	}
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(dir, "rt.walkie.md")
	write("rt.walkie.md", `---
walkie: 1
id: rt
mode: roundtable
implementer: ada
reviewers: [brook, cy]
grader: 'test "$(basename "$WALKIE_DIR")" != 4 && test -f {dir}/hidden/ok'
workspace: work
max_rounds: 3
---
# Briefing
Write work/out.
`)
	write("hidden/ok", "")
	write("work/.keep", "")
	write("scripts/ada.yaml", `usage: true
cost_usd: 0.1
shell: "echo v{round} > work/out"
when:
  - id: "-5$"
    last_blocker: brook
    shell: "echo KEEP > work/out"
  - id: "-5$"
    shell: "echo SKIP > work/out"
`)
	write("scripts/brook.yaml", fmt.Sprintf(`behavior: verdict
usage: true
cost_usd: 0.02
verdict: %[1]s
when:
  - id: "-2$"
    verdicts: [%[2]s, %[1]s]
  - id: "-3$"
    verdicts: [%[2]s, %[2]s, %[1]s]
  - id: "-5$"
    file: out
    contains: KEEP
  - id: "-5$"
    verdict: %[3]s
`, approve, block("x"), block("\n")))
	write("scripts/cy.yaml", fmt.Sprintf(`behavior: verdict
usage: true
cost_usd: 0.01
verdict: %[1]s
when:
  - id: "-5$"
    file: out
    contains: SKIP
  - id: "-5$"
    verdict: %[2]s
`, approve, block("\n")))
	var cfg strings.Builder
	// The reviewers work in copies of their own: their scripts are outside.
	fmt.Fprintf(&cfg, "defaults:\n  timeout: 30s\n  stall: 20s\n  grace: 200ms\n  kill_grace: 500ms\n  sandbox_read: [%q]\nagents:\n", filepath.Join(dir, "scripts"))
	for _, name := range []string{"ada", "brook", "cy"} {
		fmt.Fprintf(&cfg, "  %s:\n    command: [%s, --file, \"{file}\", --agent, \"{agent}\", --round, \"{round}\", --script, %s]\n    usage: claude-json\n",
			name, bin, filepath.Join(dir, "scripts", name+".yaml"))
	}
	c, err := config.Parse("walkie.yaml", []byte(cfg.String()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(src); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var done []string
	s, err := trials.Run(ctx, trials.Options{File: src, N: 5, Parallel: 2, Config: c, Done: func(tr trials.Trial) {
		mu.Lock()
		defer mu.Unlock()
		done = append(done, tr.ID)
	}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s.Markdown(&out)
	got := normalize(out.String(), dir)
	golden := filepath.Join("testdata", "five.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("the distribution differs from %s:\n%s", golden, got)
	}
	if len(done) != 5 {
		t.Fatalf("told of %d trials ending: %v", len(done), done)
	}
	// The same from the copies alone.
	again, err := trials.Summarize(filepath.Join(dir, "rt.trials"))
	if err != nil {
		t.Fatal(err)
	}
	var out2 bytes.Buffer
	again.Markdown(&out2)
	if out2.String() != out.String() {
		t.Fatalf("from the copies alone:\n%s\nafter the run:\n%s", out2.String(), out.String())
	}
	// Each copy is an ordinary record with an id of its own, and the
	// distribution matches what the records themselves say.
	wantEnd := map[int]string{1: "converged in round 1", 2: "converged in round 2", 3: "converged in round 3", 4: "", 5: "stopped as deadlocked in round 3"}
	for k := 1; k <= 5; k++ {
		f := filepath.Join(dir, "rt.trials", fmt.Sprint(k), fmt.Sprintf("rt-%d.walkie.md", k))
		d, err := walkie.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Verify(); err != nil || d.Meta.ID != fmt.Sprintf("rt-%d", k) {
			t.Fatalf("trial %d: %v, id %s", k, err, d.Meta.ID)
		}
		b, _ := os.ReadFile(f)
		if w := wantEnd[k]; w != "" && !strings.Contains(string(b), w) || w == "" && strings.Contains(string(b), "## Supervisor") {
			t.Fatalf("trial %d's record does not say %q:\n%s", k, w, b)
		}
	}
	// The round at the cap ended trial 4: its report says max-rounds there,
	// not next-round.
	rep, _, err := controller.LoadReport(filepath.Join(dir, "rt.trials", "4", "rt-4.walkie.md"), controller.StandingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rep.RoundList); n != 3 || rep.RoundList[1].Decision != roundtable.DecisionNextRound || rep.RoundList[2].Decision != roundtable.DecisionMaxRounds {
		t.Fatalf("trial 4's rounds %+v", rep.RoundList)
	}
	if d, _ := walkie.Load(src); len(d.Entries) != 0 {
		t.Fatal("the source record changed")
	}
	// Running again adds copies after those there; a source that has
	// begun is refused.
	if _, err := trials.Run(ctx, trials.Options{File: filepath.Join(dir, "rt.trials", "1", "rt-1.walkie.md"), N: 1, Config: c}); err == nil || !strings.Contains(err.Error(), "has 3 turns") {
		t.Fatalf("a begun source: %v", err)
	}
}

// normalize makes a summary comparable across runs: the temp dir and the
// times, which differ every run, are replaced.
func normalize(s, dir string) string {
	s = strings.ReplaceAll(s, dir, "DIR")
	return durRe.ReplaceAllString(s, "<time>")
}

var durRe = regexp.MustCompile(`\b([0-9]+h)?([0-9]+m)?[0-9]+(\.[0-9]+)?(ms|s)\b`)
