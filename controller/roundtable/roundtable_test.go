package roundtable_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// A round-table fixture: a walkie file in dir, its workspace dir/work, one
// fake agent per participant scripted by dir/scripts/NAME.yaml, and every
// prompt an agent is given appended to dir/prompts/NAME-TURN.txt.
type rtFixture struct {
	t                  *testing.T
	dir, file, work    string
	cfg                *config.Config
	implementer        string
	reviewers          []string
	extraFrontMatter   string
	briefing           string
	grader             string // YAML value of grader:
	quorum, maxRounds  int
	agentTimeout       string
	stall              string
	usage              bool
	scripts            map[string]string
	workspace          map[string]string
	extraAgentSettings string
	// agentSettings, by agent, are more of its keys (YAML, indented).
	agentSettings map[string]string
	// commands, by agent: a shell command run instead of the fake agent.
	commands map[string]string
	// phases, as KIND: AGENT pairs in order; the file is then format 2 and
	// each phase's agent gets a fake of its own.
	phases [][2]string
}

func newRT(t *testing.T) *rtFixture {
	t.Helper()
	dir := t.TempDir()
	return &rtFixture{t: t, dir: dir, file: filepath.Join(dir, "rt.walkie.md"), work: filepath.Join(dir, "work"),
		implementer: "ada", reviewers: []string{"brook", "cy"}, briefing: "Build it.", grader: "[\"true\"]", maxRounds: 4,
		agentTimeout: "30s", stall: "20s", scripts: map[string]string{}, workspace: map[string]string{}}
}

// fakeAgentBin builds cmd/fakeagent into the test's temp dir.
func fakeAgentBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeagent")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/fakeagent").CombinedOutput(); err != nil {
		t.Fatalf("build fakeagent: %v\n%s", err, out)
	}
	return bin
}

func (f *rtFixture) write(rel, content string) {
	f.t.Helper()
	p := filepath.Join(f.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// setup writes the file, the workspace, the scripts and the config.
func (f *rtFixture) setup() {
	t := f.t
	t.Helper()
	bin := fakeAgentBin(t)
	q := ""
	if f.quorum > 0 {
		q = fmt.Sprintf("quorum: %d\n", f.quorum)
	}
	version, agents := 1, append([]string{f.implementer}, f.reviewers...)
	if len(f.phases) > 0 {
		version = 2
		q += "phases:\n"
		for _, p := range f.phases {
			q += fmt.Sprintf("  - %s: %s\n", p[0], p[1])
			if !slices.Contains(agents, p[1]) {
				agents = append(agents, p[1])
			}
		}
	}
	f.write("rt.walkie.md", fmt.Sprintf("---\nwalkie: %d\nid: rt\nmode: roundtable\nimplementer: %s\nreviewers: [%s]\n%sgrader: %s\ngrader_timeout: 30s\nworkspace: work\nmax_rounds: %d\n%s---\n# Briefing\n%s\n",
		version, f.implementer, strings.Join(f.reviewers, ", "), q, f.grader, f.maxRounds, f.extraFrontMatter, f.briefing))
	if err := os.MkdirAll(f.work, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range f.workspace {
		f.write(filepath.Join("work", p), c)
	}
	usage := "none"
	if f.usage {
		usage = "claude-json"
	}
	var cfg strings.Builder
	// The fake agents' sandboxes let them run the fake, read its scripts
	// and keep its counters and the prompts they were given.
	fmt.Fprintf(&cfg, "defaults:\n  timeout: %s\n  stall: %s\n  grace: 200ms\n  kill_grace: 500ms\n  sandbox_read: [%q, %q, %q]\n  sandbox_write: [%q, %q]\nagents:\n",
		f.agentTimeout, f.stall, filepath.Dir(bin), filepath.Join(f.dir, "scripts"), cmp.Or(pythonRoot(), "/usr"), filepath.Join(f.dir, "prompts"), filepath.Join(f.dir, "state"))
	for _, name := range agents {
		script := f.scripts[name]
		switch {
		case script != "":
		case name == f.implementer:
			script = "{}\n" // append a turn
		case slices.Contains(f.reviewers, name):
			script = "behavior: verdict\n" // approve
		default:
			script = "behavior: write\nbody: \"notes of {agent}\"\n" // a phase's file
		}
		f.write(filepath.Join("scripts", name+".yaml"), script)
		if c, ok := f.commands[name]; ok {
			fmt.Fprintf(&cfg, "  %s:\n    command: [sh, -c, %q]\n    usage: none\n%s%s", name, c, f.extraAgentSettings, f.agentSettings[name])
			continue
		}
		fmt.Fprintf(&cfg, "  %s:\n    command: [sh, -c, 'printf \"%%s\\n=====\\n\" \"$0\" >> %s/prompts/{agent}-{turn}.txt; exec %s --file \"$1\" --agent {agent} --turn {turn} --round {round} --script %s/scripts/{agent}.yaml --state %s/state/{agent}', \"{prompt}\", \"{file}\"]\n    usage: %s\n%s",
			name, f.dir, bin, f.dir, f.dir, usage, f.extraAgentSettings+f.agentSettings[name])
	}
	for _, d := range []string{"prompts", "state", "scripts"} {
		if err := os.MkdirAll(filepath.Join(f.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c, err := config.Parse(filepath.Join(f.dir, "walkie.yaml"), []byte(cfg.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, cfg.String())
	}
	f.cfg = c
}

func (f *rtFixture) run(opts ...func(*controller.Options)) controller.Summary {
	f.t.Helper()
	o := controller.Options{File: f.file, Config: f.cfg, Approve: true}
	for _, fn := range opts {
		fn(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := controller.Run(ctx, o)
	if err != nil {
		f.t.Fatalf("Run: %v", err)
	}
	d, err := walkie.Load(f.file)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := d.Verify(); err != nil {
		f.t.Fatalf("the record does not verify after the run: %v", err)
	}
	return sum
}

func (f *rtFixture) record() string {
	b, err := os.ReadFile(f.file)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *rtFixture) stateDir() string { return filepath.Join(f.dir, ".walkie", "rt") }

func (f *rtFixture) round(n int) roundtable.RoundResult {
	f.t.Helper()
	var rr roundtable.RoundResult
	b, err := os.ReadFile(filepath.Join(f.stateDir(), "roundtable", fmt.Sprintf("round-%d", n), "round.json"))
	if err == nil {
		err = json.Unmarshal(b, &rr)
	}
	if err != nil {
		f.t.Fatalf("round %d: no round.json (%v)", n, err)
	}
	return rr
}

func (f *rtFixture) prompts(name string, turn int) string {
	b, _ := os.ReadFile(filepath.Join(f.dir, "prompts", fmt.Sprintf("%s-%d.txt", name, turn)))
	return string(b)
}

func leakCheck(t *testing.T) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// needPython: the evaluator's hidden tests are a Python script.
// needPython is the python3 interpreter itself, not a shim in front of
// it (pyenv's lives in the HOME, which the grader's sandbox keeps out of
// reach); pythonRoot is the installation it needs to read.
func needPython(t *testing.T) string {
	exe, _ := pythonInstall(sessiontest.Tool(t, "python3"))
	return exe
}

func pythonRoot() string {
	p, err := exec.LookPath("python3")
	if err != nil {
		return ""
	}
	_, root := pythonInstall(p)
	return root
}

func pythonInstall(python string) (exe, root string) {
	out, err := exec.Command(python, "-c", "import sys; print(sys.executable); print(sys.base_prefix)").Output()
	if f := strings.Fields(string(out)); err == nil && len(f) == 2 {
		return f[0], f[1]
	}
	return python, filepath.Dir(filepath.Dir(python))
}

// The evaluator story of the round table's design: one agent researches
// the exact rules, another turns them into a spec, and only then does the
// implementer start. Round 1 computes in floats: the hidden tests pass,
// and only a reviewer catches that 2 ** 53 + 1 comes out wrong, citing the
// spec's section. Round 2 is exact but floors wrongly: the reviewers
// approve and the grader catches it. Round 3 converges.
func TestRoundtableEvaluatorStory(t *testing.T) {
	leakCheck(t)
	python := needPython(t)
	f := newRT(t)
	f.usage = true
	f.phases = [][2]string{{"research", "gem"}, {"plan", "cla"}}
	f.briefing = "Write evaluate(expr) in work/evaluate.py: it evaluates integer arithmetic (+ - * ** //).\n"
	f.grader = fmt.Sprintf("[%s, \"{dir}/hidden/test_evaluate.py\"]", python)
	f.write("hidden/test_evaluate.py", `import os, sys
sys.path.insert(0, os.getcwd())
from evaluate import evaluate
assert evaluate("1 + 2") == 3
assert evaluate("6 * 7") == 42
assert evaluate("2 ** 10") == 1024
assert evaluate("-7 // 2") == -4, "floor division"
print("HIDDEN-TESTS: 4 passed")
`)
	f.scripts["gem"] = `behavior: write
usage: true
cost_usd: 0.03
body: "# Research\n\nPython integers are exact at any size. An IEEE 754 double has a 53-bit significand: 2 ** 53 + 1 is not representable.\n// floors toward negative infinity: -7 // 2 is -4.\n"
`
	f.scripts["cla"] = `behavior: write
usage: true
cost_usd: 0.04
body: "# Spec\n\n§1 evaluate(expr) evaluates + - * ** // over integers.\n§2 Results are exact integers, however large: evaluate('2 ** 53 + 1') == 9007199254740993.\n§3 // is floor division: evaluate('-7 // 2') == -4.\n"
`
	f.scripts["ada"] = `usage: true
cost_usd: 0.05
bodies:
  - "evaluate() parses with Python's own grammar and computes in floats."
  - "evaluate() computes in integers now: 2 ** 53 + 1 is exact."
  - "evaluate() floors as §3 says."
shells:
  - "printf 'def evaluate(expr):\n    return float(eval(expr, {\"__builtins__\": {}}))\n' > work/evaluate.py"
  - "printf 'def evaluate(expr):\n    return int(eval(expr.replace(\"//\", \"/\"), {\"__builtins__\": {}}))\n' > work/evaluate.py"
  - "printf 'def evaluate(expr):\n    return eval(expr, {\"__builtins__\": {}})\n' > work/evaluate.py"
`
	f.scripts["brook"] = `behavior: verdict
usage: true
cost_usd: 0.02
verdict: '{"verdict": "approve", "objections": []}'
when:
  - file: evaluate.py
    contains: "float("
    verdict: '{"verdict": "request_changes", "objections": [{"summary": "evaluate(\"2 ** 53 + 1\") returns 9007199254740992.0: floats lose integers above 2**53", "rule": "spec §2: results are exact integers, however large", "failing_input": "2 ** 53 + 1", "blocking": true}]}'
`
	f.scripts["cy"] = `behavior: verdict
usage: true
cost_usd: 0.01
verdict: '{"verdict": "approve", "objections": [{"summary": "a docstring would help", "blocking": false}]}'
`
	f.setup()
	sum := f.run()

	if sum.Status != walkie.StatusConverged || sum.Turns != 9 {
		t.Fatalf("status %s after %d turns (%s), want converged in round 3\n%s", sum.Status, sum.Turns, sum.Reason, f.record())
	}
	// The phases ran first, once each, and are pinned in the record.
	d, err := walkie.Load(f.file)
	if err != nil {
		t.Fatal(err)
	}
	pins := roundtable.PhasePins(d)
	for _, kind := range []string{"research", "plan"} {
		b, err := os.ReadFile(roundtable.PhasePath(f.stateDir(), kind))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); pins[kind].SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("the %s pin %q does not match its file", kind, pins[kind].SHA256)
		}
	}
	if d.Entries[0].Kind != walkie.KindSupervisor || d.Entries[1].Kind != walkie.KindSupervisor || d.Entries[2].Turn != 1 ||
		!strings.Contains(string(d.Entries[1].Body), "walkie: the plan phase is approved. cla wrote the spec in 1 attempt") ||
		!strings.Contains(string(d.Entries[1].Body), "approved by --approve") {
		t.Fatalf("the record does not open with the two approvals:\n%s", f.record())
	}
	// Each session was pointed at what it needs: the planner at the
	// research notes, the implementer and the reviewers at the spec.
	plan := f.prompts("cla", 0)
	if !strings.Contains(plan, "the research notes by gem") || !regexp.MustCompile(`walkie-phase-[^/]+/phases/research\.md`).MatchString(plan) {
		t.Fatalf("the planner's prompt:\n%s", plan)
	}
	if research := f.prompts("gem", 0); strings.Contains(research, "Approved earlier") {
		t.Fatalf("the researcher was given earlier phases:\n%s", research)
	}
	if p := f.prompts("ada", 1); !strings.Contains(p, "The approved spec") || !strings.Contains(p, filepath.Join(f.stateDir(), "phases", "plan.md")) {
		t.Fatalf("the implementer's prompt does not cite the spec:\n%s", p)
	}
	if p := f.prompts("brook", 2); !regexp.MustCompile(`walkie-review-[^/]+/phases/plan\.md`).MatchString(p) || !strings.Contains(p, `the spec section (e.g. \"spec §3: …\")`) {
		t.Fatalf("the reviewer's prompt does not cite its copy of the spec:\n%s", p)
	}
	r1, r2, r3 := f.round(1), f.round(2), f.round(3)
	if r1.Decision != roundtable.DecisionNextRound || !r1.Grader.Passed() || r1.Approvals != 1 {
		t.Fatalf("round 1: %s (%s); want the grader passing and brook blocking", r1.Decision, r1.Reason)
	}
	if r2.Decision != roundtable.DecisionNextRound || r2.Grader.Passed() || r2.Approvals != 2 {
		t.Fatalf("round 2: %s (%s); want both approving and the grader failing", r2.Decision, r2.Reason)
	}
	if r3.Decision != roundtable.DecisionConverged || !r3.Grader.Passed() || r3.Approvals != 2 {
		t.Fatalf("round 3: %s (%s)", r3.Decision, r3.Reason)
	}
	// The catch was real: the round-1 work the grader passed is wrong on
	// the reviewer's input, and the later work is right.
	for round, want := range map[int]string{1: "9007199254740992", 2: "9007199254740993", 3: "9007199254740993"} {
		snap := filepath.Join(f.stateDir(), "roundtable", fmt.Sprintf("round-%d", round), "snapshot")
		cmd := exec.Command(python, "-c", "from evaluate import evaluate; print(int(evaluate('2 ** 53 + 1')))")
		cmd.Dir = snap
		out, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Fatalf("round %d snapshot gives %q (%v), want %s", round, out, err, want)
		}
	}
	// The implementer heard the objection in round 2, and the grader in
	// round 3; no reviewer ever saw the grader's output.
	if p := f.prompts("ada", 4); !strings.Contains(p, `failing input "2 ** 53 + 1"`) || !strings.Contains(p, `brook: rule "spec §2`) || strings.Contains(p, "hidden tests did not pass") {
		t.Fatalf("round-2 implementer prompt:\n%s", p)
	}
	if p := f.prompts("ada", 7); !strings.Contains(p, "hidden tests did not pass") || !strings.Contains(p, "floor division") {
		t.Fatalf("round-3 implementer prompt:\n%s", p)
	}
	for _, name := range []string{"brook", "cy"} {
		for _, turn := range []int{2, 3, 5, 6, 8, 9} {
			if strings.Contains(f.prompts(name, turn), "HIDDEN-TESTS") || strings.Contains(f.prompts(name, turn), "floor division\"") {
				t.Fatalf("%s's prompt for turn %d shows the grader's output", name, turn)
			}
		}
	}
	rec := f.record()
	for _, want := range []string{"## Turn 2 · brook", "**request changes** · 1 blocking, 0 advice", `"rule": "spec §2: results are exact integers, however large"`,
		"## Turn 3 · cy", "**approve** · 0 blocking, 1 advice", "## Turn 5 · brook", "converged in round 3"} {
		if !strings.Contains(rec, want) {
			t.Fatalf("the record lacks %q:\n%s", want, rec)
		}
	}
	if strings.Contains(rec, "HIDDEN-TESTS") {
		t.Fatal("the grader's output reached the record, which reviewers read")
	}
	// Cost: research 0.03, plan 0.04, implementer 3 × 0.05, brook 3 × 0.02,
	// cy 3 × 0.01.
	if want := 0.31; sum.CostUSD < want-1e-9 || sum.CostUSD > want+1e-9 {
		t.Fatalf("cost %.4f, want %.2f", sum.CostUSD, want)
	}
	rep, _, err := controller.LoadReport(f.file, controller.StandingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 2 || rep.Phases[0].Phase != "research" || rep.Phases[0].CostUSD != 0.03 || rep.Phases[1].CostUSD != 0.04 ||
		rep.Phases[1].DurationMS <= 0 || rep.Phases[1].ApprovedBy != roundtable.ApprovedByFlag {
		t.Fatalf("report phases %+v", rep.Phases)
	}
	// brook's one objection was confirmed by the fix that followed it.
	if s := rep.Scores[0]; s.Reviewer != "brook" || s.BlockedGraderPassed != 1 || s.ApprovedGraderFailed != 1 || s.Agreed != 1 ||
		s.Approved != 2 || s.Blocking != 1 || s.ConfirmedByFix != 1 || s.ConfirmedByGrader != 0 {
		t.Fatalf("brook's score %+v", s)
	}
}

// parserScripts re-enact the parser story of the round table's design:
// parse(s) splits s into lines, and the briefing never says what a lone
// newline gives. brook wants [""] (every line is an item, the empty one
// too), cy wants [] (blank lines are not items). Each blocks on the same
// input whenever the answer is not the one it wants; the implementer
// gives whoever objected last what it asked for. The grader always passes.
func parserScripts(input, ruleBrook, ruleCy string) map[string]string {
	block := func(summary, rule string) string {
		return fmt.Sprintf(`'{"verdict": "request_changes", "objections": [{"summary": %s, "rule": %s, "failing_input": %s, "blocking": true}]}'`,
			quoteJSON(summary), quoteJSON(rule), quoteJSON(input))
	}
	write := func(mark string) string {
		return fmt.Sprintf(`"printf 'def parse(s):\n    return s.split(\"\\\\n\")  # %s\n' > work/parse.py"`, mark)
	}
	return map[string]string{
		"ada": fmt.Sprintf(`usage: true
cost_usd: 0.25
body: "parse() drops blank lines."
shell: %s
when:
  - last_blocker: brook
    body: "parse() keeps blank lines now, as brook asks."
    shell: %s
  - last_blocker: cy
    body: "parse() drops blank lines now, as cy asks."
    shell: %s
`, write("SKIP"), write("KEEP"), write("SKIP")),
		"brook": fmt.Sprintf(`behavior: verdict
usage: true
cost_usd: 0.125
verdict: %s
when:
  - file: parse.py
    contains: KEEP
    verdict: '{"verdict": "approve", "objections": []}'
`, block("parse drops the empty line; it must give [\"\"]", ruleBrook)),
		"cy": fmt.Sprintf(`behavior: verdict
usage: true
cost_usd: 0.0625
verdict: %s
when:
  - file: parse.py
    contains: SKIP
    verdict: '{"verdict": "approve", "objections": []}'
`, block("parse keeps a blank line as an item; it must give []", ruleCy)),
	}
}

// The parser story at quorum 2: the reviewers take turns blocking on the
// one input the briefing leaves open, whatever rule text they write and
// whether the input is named in words or is the story's own lone newline.
// The run stops as deadlocked in round 3 of 6, naming the question; at
// quorum 1 the same scripts converge in round 1.
func TestRoundtableParserStoryDeadlocks(t *testing.T) {
	leakCheck(t)
	for _, tc := range []struct {
		name, input, ruleBrook, ruleCy string
	}{
		{"input in words, the same rule", "a lone newline", "spec §2: every line of s is an item", "spec §2: every line of s is an item"},
		{"a lone newline, different rules", "\n", "every line is an item, the empty one too", "blank lines are not items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRT(t)
			f.maxRounds = 6
			f.quorum = 2
			f.usage = true
			f.briefing = "Write parse(s) in work/parse.py: it splits s into its lines."
			f.grader = `"test -f parse.py && echo graded"`
			f.scripts = parserScripts(tc.input, tc.ruleBrook, tc.ruleCy)
			f.setup()
			sum := f.run()
			if sum.Status != walkie.StatusDeadlocked || sum.Turns != 9 {
				t.Fatalf("status %s after %d turns (%s), want deadlocked after round 3\n%s", sum.Status, sum.Turns, sum.Reason, f.record())
			}
			for i, want := range []string{roundtable.DecisionNextRound, roundtable.DecisionNextRound, roundtable.DecisionDeadlocked} {
				if got := f.round(i + 1); got.Decision != want {
					t.Fatalf("round %d decided %s (%s), want %s", i+1, got.Decision, got.Reason, want)
				}
			}
			dl := f.round(3).Deadlock
			if dl == nil || dl.Kind != roundtable.KindAlternating || dl.Question != tc.input || len(dl.Evidence) != 3 {
				t.Fatalf("deadlock %+v", dl)
			}
			if !strings.Contains(sum.Reason, "blocking on the input "+quoteJSON(tc.input)) {
				t.Fatalf("reason %q does not name the contested input", sum.Reason)
			}
			md, err := os.ReadFile(filepath.Join(f.stateDir(), "roundtable", "deadlock.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"What must the work do on the input " + quoteJSON(tc.input) + "?", tc.ruleBrook, tc.ruleCy, "| 1 | brook |", "| 2 | cy |", "| 3 | brook |"} {
				if !strings.Contains(string(md), want) {
					t.Fatalf("deadlock.md lacks %q:\n%s", want, md)
				}
			}
			rec := f.record()
			if !strings.Contains(rec, "## Supervisor") || !strings.Contains(rec, "stopped as deadlocked in round 3 of 6") ||
				!strings.Contains(rec, "**What must the work do on the input "+quoteJSON(tc.input)+"?**") {
				t.Fatalf("the record has no supervisor entry naming the question:\n%s", rec)
			}
			// Ended: a second run does nothing and says so.
			if again := f.run(); again.Status != walkie.StatusDeadlocked || len(again.Attempts) != 0 {
				t.Fatalf("a second run: %+v", again)
			}

			// The quorum lever on the recorded deadlock: at quorum 1 it
			// would have stopped in round 1, at the cost of round 1.
			rep, _, err := controller.LoadReport(f.file, controller.StandingOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Objections on the contested input are confirmed by nothing.
			if b, c := rep.Scores[0], rep.Scores[1]; b.Blocking != 2 || c.Blocking != 1 || b.ConfirmedByFix+b.ConfirmedByGrader+c.ConfirmedByFix+c.ConfirmedByGrader != 0 {
				t.Fatalf("scores %+v", rep.Scores)
			}
			one, err := rep.Replay(1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if one.Round != 1 || one.Decision != roundtable.DecisionConverged || !one.Known || one.Recorded {
				t.Fatalf("quorum 1: %+v", one)
			}
			two, err := rep.Replay(2, nil)
			if err != nil {
				t.Fatal(err)
			}
			if two.Round != 3 || two.Decision != roundtable.DecisionDeadlocked || !two.Known || !two.Recorded || !approx(two.CostUSD, sum.CostUSD) {
				t.Fatalf("quorum 2 (the run's own rule) does not give the run back: %+v, the run cost %.4f", two, sum.CostUSD)
			}
			// Counting brook alone, it converges once brook is pleased, in
			// round 2; counting cy alone, at once.
			if b, _ := rep.Replay(1, []string{"brook"}); b.Round != 2 || b.Decision != roundtable.DecisionConverged || !approx(b.CostUSD, 2*0.25+2*0.125) {
				t.Fatalf("brook alone: %+v", b)
			}
			if c, _ := rep.Replay(0, []string{"cy"}); c.Round != 1 || c.Decision != roundtable.DecisionConverged || !approx(c.CostUSD, 0.25+0.0625) {
				t.Fatalf("cy alone: %+v", c)
			}
			if _, err := rep.Replay(3, nil); err == nil {
				t.Fatal("a quorum of 3 of 2 reviewers replayed")
			}
			if _, err := rep.Replay(1, []string{"dee"}); err == nil {
				t.Fatal("a reviewer the round table does not have replayed")
			}

			// Checked against a real run at quorum 1 of the same scripts.
			g := newRT(t)
			g.maxRounds, g.quorum, g.usage = 6, 1, true
			g.briefing, g.grader, g.scripts = f.briefing, f.grader, parserScripts(tc.input, tc.ruleBrook, tc.ruleCy)
			g.setup()
			real := g.run()
			if real.Status != walkie.StatusConverged || real.Turns != 3 || !approx(real.CostUSD, one.CostUSD) {
				t.Fatalf("the real run at quorum 1: %s after %d turns, $%.4f; the replay said round 1 at $%.4f", real.Status, real.Turns, real.CostUSD, one.CostUSD)
			}
			// And the other way: the quorum-1 record replayed at quorum 2
			// would have gone on into rounds that were never run.
			rep1, _, err := controller.LoadReport(g.file, controller.StandingOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if up, _ := rep1.Replay(2, nil); up.Known || up.Decision != roundtable.DecisionUnknown || up.Round != 1 || !strings.Contains(up.Note, "what happens after round 1 is unknown") {
				t.Fatalf("quorum 2 on the quorum-1 record: %+v", up)
			}
		})
	}
}

func approx(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A reviewer that writes to its copy of the workspace changes nothing of
// the real one, and the change is recorded; a reviewer that writes to the
// real workspace by its path is caught, undone and recorded too.
func TestRoundtableReviewerCannotChangeTheWorkspace(t *testing.T) {
	leakCheck(t)
	f := newRT(t)
	f.maxRounds = 2
	f.workspace = map[string]string{"README": "read me\n", "evaluate.py": "v0\n"}
	f.scripts["ada"] = `shell: "echo v1 > work/evaluate.py"`
	f.scripts["brook"] = `behavior: verdict
shell: 'echo hacked >> "$WALKIE_WORKSPACE/evaluate.py"; rm "$WALKIE_WORKSPACE/README"; echo new > "$WALKIE_WORKSPACE/new.txt"'
`
	f.scripts["cy"] = fmt.Sprintf(`behavior: verdict
shell: 'echo intruder >> %s/evaluate.py; echo stray > %s/stray.txt'
`, f.work, f.work)
	// Unsandboxed, or its sandbox refuses the intrusion before the
	// round table's own check can catch it: that check must hold alone.
	f.agentSettings = map[string]string{"cy": "    sandbox: off\n"}
	f.setup()
	sum := f.run()
	if sum.Status != walkie.StatusConverged {
		t.Fatalf("status %s (%s)", sum.Status, sum.Reason)
	}
	for p, want := range map[string]string{"evaluate.py": "v1\n", "README": "read me\n"} {
		if b, err := os.ReadFile(filepath.Join(f.work, p)); err != nil || string(b) != want {
			t.Fatalf("workspace %s = %q (%v), want %q", p, b, err, want)
		}
	}
	for _, p := range []string{"new.txt", "stray.txt"} {
		if _, err := os.Stat(filepath.Join(f.work, p)); err == nil {
			t.Fatalf("workspace has %s, written during review", p)
		}
	}
	now, err := roundtable.WorkspaceHash(context.Background(), f.work)
	if err != nil {
		t.Fatal(err)
	}
	rr := f.round(1)
	if now != rr.Workspace {
		t.Fatal("the workspace is not in its frozen state after the review")
	}
	brook := rr.Reviews[0]
	want := []roundtable.Change{{Path: "README", Kind: "removed"}, {Path: "evaluate.py", Kind: "modified"}, {Path: "new.txt", Kind: "added"}}
	if !slices.Equal(brook.Discarded, want) {
		t.Fatalf("brook's discarded changes %v, want %v", brook.Discarded, want)
	}
	if !slices.Equal(rr.Intruded, []roundtable.Change{{Path: "evaluate.py", Kind: "modified"}, {Path: "stray.txt", Kind: "added"}}) {
		t.Fatalf("intrusions %v", rr.Intruded)
	}
	aside, err := os.ReadFile(filepath.Join(f.stateDir(), "roundtable", "round-1", "intruded", "evaluate.py"))
	if err != nil || string(aside) != "v1\nintruder\n" {
		t.Fatalf("the intruding version was not kept aside: %q %v", aside, err)
	}
	if rec := f.record(); !strings.Contains(rec, `changes brook made in its copy of the workspace were discarded: "README" (removed), "evaluate.py" (modified), "new.txt" (added)`) {
		t.Fatalf("the record does not say what was discarded:\n%s", rec)
	}
}

// Reviewers of one round run at the same time: their recorded sessions
// overlap, and the round's review span is near the slowest, not the sum.
func TestRoundtableReviewersRunInParallel(t *testing.T) {
	leakCheck(t)
	f := newRT(t)
	f.maxRounds = 1
	f.reviewers = []string{"brook", "cy", "dee"}
	for _, r := range f.reviewers {
		f.scripts[r] = "behavior: verdict\ndelay: 1500ms\n"
	}
	f.setup()
	if sum := f.run(); sum.Status != walkie.StatusConverged {
		t.Fatalf("status %s (%s)", sum.Status, sum.Reason)
	}
	recs, err := engine.ReadTurnLog(f.stateDir())
	if err != nil {
		t.Fatal(err)
	}
	var starts, ends []time.Time
	var sum time.Duration
	for _, r := range recs {
		if r.Role != "reviewer" {
			continue
		}
		starts, ends = append(starts, r.Started), append(ends, r.Ended)
		sum += r.Ended.Sub(r.Started)
	}
	if len(starts) != 3 {
		t.Fatalf("%d reviewer records, want 3", len(starts))
	}
	first, lastStart := slices.MinFunc(starts, time.Time.Compare), slices.MaxFunc(starts, time.Time.Compare)
	firstEnd, last := slices.MinFunc(ends, time.Time.Compare), slices.MaxFunc(ends, time.Time.Compare)
	if !lastStart.Before(firstEnd) {
		t.Fatalf("the reviews did not overlap: the last started at %s, the first ended at %s", lastStart, firstEnd)
	}
	t.Logf("3 reviews of ~1.5s each: sessions total %s, the round's reviews spanned %s", sum.Round(time.Millisecond), last.Sub(first).Round(time.Millisecond))
	if span := last.Sub(first); span > sum*2/3 {
		t.Fatalf("review span %s for sessions totalling %s: not run at the same time", span, sum)
	}
}

// A reviewer that times out is retried, and a reviewer that never gives a
// valid verdict is recorded as such: neither counts as a rejection.
func TestRoundtableReviewerFailuresAreNotRejections(t *testing.T) {
	leakCheck(t)
	t.Run("timeout then verdict", func(t *testing.T) {
		f := newRT(t)
		f.maxRounds = 1
		f.agentTimeout = "3s"
		f.scripts["brook"] = "behavior: verdict\nsteps:\n  - behavior: hang\n  - {}\n"
		f.scripts["cy"] = "behavior: verdict\n"
		f.setup()
		sum := f.run()
		if sum.Status != walkie.StatusConverged {
			t.Fatalf("status %s (%s)", sum.Status, sum.Reason)
		}
		brook := f.round(1).Reviews[0]
		if len(brook.Attempts) != 2 || brook.Attempts[0].Outcome != walkie.OutcomeTimeout || brook.Outcome != walkie.OutcomeAccepted {
			t.Fatalf("brook's attempts %+v", brook.Attempts)
		}
		if rec := f.record(); !strings.Contains(rec, "2 attempts: timeout, then accepted") {
			t.Fatalf("the record does not show the retry:\n%s", rec)
		}
	})
	t.Run("no valid verdict", func(t *testing.T) {
		f := newRT(t)
		f.maxRounds = 3
		f.scripts["brook"] = "behavior: verdict\n"
		f.scripts["cy"] = "behavior: verdict\nverdict: 'I think it is fine'\n"
		f.setup()
		sum := f.run()
		if sum.Status != walkie.StatusFailed || sum.Turns != 3 {
			t.Fatalf("status %s after %d turns (%s), want failed after round 1", sum.Status, sum.Turns, sum.Reason)
		}
		if !strings.Contains(sum.Reason, "cy (malformed)") || !strings.Contains(sum.Reason, "not a rejection") {
			t.Fatalf("reason %q", sum.Reason)
		}
		cy := f.round(1).Reviews[1]
		if cy.Verdict != nil || len(cy.Attempts) != 2 || cy.Outcome != walkie.OutcomeMalformed {
			t.Fatalf("cy %+v", cy)
		}
		if rec := f.record(); !strings.Contains(rec, "**no verdict** (2 attempts: malformed, then malformed)") || !strings.Contains(rec, "this is not a rejection") {
			t.Fatalf("the record:\n%s", rec)
		}
	})
}

// started reports whether the agent's fake CLI has counted a run (its
// --state file), which it does first thing.
func (f *rtFixture) started(agent string) bool {
	_, err := os.Stat(filepath.Join(f.dir, "state", agent))
	return err == nil
}

func (f *rtFixture) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(f.stateDir(), rel))
	return err == nil
}

// Interrupted mid-review, a round table keeps what is done (the freeze,
// the grader, the reviews that finished) and a second run picks up there:
// only the interrupted reviewer runs again, and its attempt numbers go on.
func TestRoundtableInterruptedReviewResumes(t *testing.T) {
	leakCheck(t)
	f := newRT(t)
	f.maxRounds = 2
	// Into the fakes' own folder: the grader's sandbox writes only its copy
	// and the defaults' paths.
	f.grader = fmt.Sprintf(`"echo graded >> %s/state/graded.log"`, f.dir)
	// brook's first review lasts until the run is cancelled, however long
	// cy takes on a loaded machine: never its timeout or stall first.
	f.agentTimeout, f.stall = "10m", "10m"
	f.scripts["brook"] = "behavior: verdict\nsteps:\n  - delay: 10m\n  - {}\n"
	f.scripts["cy"] = "behavior: verdict\n"
	f.setup()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type out struct {
		sum controller.Summary
		err error
	}
	done := make(chan out, 1)
	go func() {
		sum, err := controller.Run(ctx, controller.Options{File: f.file, Config: f.cfg, Approve: true})
		done <- out{sum, err}
	}()
	sessiontest.WaitFor(t, 30*time.Second, "cy's review saved", func() bool { return f.exists("roundtable/round-1/review-cy.json") })
	// brook's process counted its first run (the running file is written
	// before the session starts): cancelled earlier, its next run would
	// be its first step again.
	sessiontest.WaitFor(t, 30*time.Second, "brook's first review started", func() bool { return f.started("brook") })
	cancel()
	first := <-done
	if first.err != nil || !first.sum.Interrupted || first.sum.Turns != 1 {
		t.Fatalf("first run: %+v, %v", first.sum, first.err)
	}
	if f.exists("roundtable/round-1/review-brook.json") || f.exists("roundtable/running/brook.json") {
		t.Fatal("the interrupted review left a result or a running record")
	}
	sum := f.run()
	if sum.Status != walkie.StatusConverged || sum.Turns != 3 {
		t.Fatalf("second run: %s after %d turns (%s)", sum.Status, sum.Turns, sum.Reason)
	}
	if n := strings.Count(f.prompts("cy", 3), "====="); n != 1 {
		t.Fatalf("cy ran %d times; its saved review should have been kept", n)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "state", "graded.log")); string(b) != "graded\n" {
		t.Fatalf("the grader ran %d times for one frozen state", strings.Count(string(b), "graded"))
	}
	recs, _ := engine.ReadTurnLog(f.stateDir())
	var brook []string
	for _, r := range recs {
		if r.Agent == "brook" {
			brook = append(brook, fmt.Sprintf("%d:%s", r.Attempt, r.Outcome))
		}
	}
	if !slices.Equal(brook, []string{"1:interrupted", "2:accepted"}) {
		t.Fatalf("brook's attempts %v", brook)
	}
	if b := f.round(1).Reviews[0]; len(b.Attempts) != 1 || b.Attempts[0].Attempt != 2 {
		t.Fatalf("brook's review %+v", b)
	}
}

// walkie halt ends the running reviewers at once; walkie resume and a new
// run finish the round.
func TestRoundtableHaltDuringReview(t *testing.T) {
	leakCheck(t)
	f := newRT(t)
	f.maxRounds = 1
	f.agentTimeout, f.stall = "10m", "10m"
	f.scripts["brook"] = "behavior: verdict\nsteps:\n  - delay: 10m\n  - {}\n"
	f.scripts["cy"] = "behavior: verdict\nsteps:\n  - delay: 10m\n  - {}\n"
	f.setup()
	done := make(chan controller.Summary, 1)
	go func() {
		sum, err := controller.Run(context.Background(), controller.Options{File: f.file, Config: f.cfg, Approve: true})
		if err != nil {
			t.Error(err)
		}
		done <- sum
	}()
	// Running as processes, not only about to: halted before they count
	// their first run, they would do their first step again after it.
	sessiontest.WaitFor(t, 30*time.Second, "both reviewers running", func() bool {
		return f.exists("roundtable/running/brook.json") && f.exists("roundtable/running/cy.json") && f.started("brook") && f.started("cy")
	})
	start := time.Now()
	if err := walkie.Halt(f.file, "a person looks"); err != nil {
		t.Fatal(err)
	}
	sum := <-done
	if sum.Status != walkie.StatusHalted || time.Since(start) > 15*time.Second {
		t.Fatalf("%s after %s", sum.Status, time.Since(start))
	}
	for _, r := range sum.Attempts {
		if r.Role == "reviewer" && r.Outcome != walkie.OutcomeHalted {
			t.Fatalf("reviewer attempt %+v", r)
		}
	}
	if err := walkie.Resume(f.file); err != nil {
		t.Fatal(err)
	}
	if sum := f.run(); sum.Status != walkie.StatusConverged {
		t.Fatalf("after resume: %s (%s)", sum.Status, sum.Reason)
	}
}

// walkie turn (Once) takes one step of a round table at a time: the
// implementer's turn, then the whole review; and a budget stops the run
// before a step that would start past it.
func TestRoundtableOnceAndBudget(t *testing.T) {
	leakCheck(t)
	f := newRT(t)
	f.maxRounds = 2
	f.usage = true
	f.extraFrontMatter = "budget_usd: 0.25\n"
	f.scripts["ada"] = "usage: true\ncost_usd: 0.1\n"
	f.scripts["brook"] = "behavior: verdict\nusage: true\ncost_usd: 0.05\nverdict: '{\"verdict\": \"request_changes\", \"objections\": [{\"rule\": \"r\", \"failing_input\": \"x{round}\", \"blocking\": true}]}'\n"
	f.scripts["cy"] = "behavior: verdict\nusage: true\ncost_usd: 0.05\n"
	f.setup()
	once := func(o *controller.Options) { o.Once = true }
	for i, want := range []int{1, 3} {
		if sum := f.run(once); sum.Status != walkie.StatusOpen || sum.Turns != want {
			t.Fatalf("step %d: %s after %d turns, want open after %d", i+1, sum.Status, sum.Turns, want)
		}
	}
	// $0.10 + $0.10 of reviews + $0.10 = $0.30 spent, over the $0.25
	// budget: the run stops before round 2's review.
	if sum := f.run(once); sum.Status != walkie.StatusOverBudget || sum.Turns != 4 {
		t.Fatalf("%s after %d turns (%s), want over-budget before round 2's review", sum.Status, sum.Turns, sum.Reason)
	}
}

// A controller that died mid-review left a reviewer running: the next run
// ends its process group and removes its sandbox before anything else.
func TestRoundtableRecoversLeftoverReviewers(t *testing.T) {
	leakCheck(t)
	f := newRT(t)
	f.maxRounds = 1
	f.setup()
	sandbox, err := os.MkdirTemp("", "walkie-review-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sandbox)
	orphan := exec.Command("sleep", "300")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { orphan.Wait(); close(exited) }()
	defer orphan.Process.Kill()
	id, err := session.Identify(orphan.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	// What a controller writes when a reviewer starts (running/NAME.json).
	left, err := json.Marshal(map[string]any{"pid": id.Pid, "start_ticks": id.StartTicks, "sandbox": sandbox})
	if err != nil {
		t.Fatal(err)
	}
	f.write(filepath.Join(".walkie", "rt", "roundtable", "running", "brook.json"), string(left))
	if sum := f.run(); sum.Status != walkie.StatusConverged {
		t.Fatalf("%s (%s)", sum.Status, sum.Reason)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the leftover reviewer is still running")
	}
	if _, err := os.Stat(sandbox); err == nil {
		t.Fatal("the leftover sandbox is still there")
	}
}

// A phase fails, times out and is halted like any turn, with the same
// outcomes and retries, and its approved file is checked against its pin
// before every step.
func TestRoundtablePhaseOutcomes(t *testing.T) {
	leakCheck(t)
	phaseRoles := func(f *rtFixture) []string {
		recs, err := engine.ReadTurnLog(f.stateDir())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			if r.Role == "research" || r.Role == "plan" {
				out = append(out, fmt.Sprintf("%s %d %s", r.Role, r.Attempt, r.Outcome))
			}
		}
		return out
	}
	t.Run("a timeout is retried", func(t *testing.T) {
		f := newRT(t)
		f.maxRounds = 1
		f.agentTimeout = "3s"
		f.phases = [][2]string{{"research", "gem"}}
		f.scripts["gem"] = "behavior: write\nbody: notes\nsteps:\n  - delay: 30s\n  - {}\n"
		f.setup()
		if sum := f.run(); sum.Status != walkie.StatusConverged {
			t.Fatalf("%s (%s)", sum.Status, sum.Reason)
		}
		if got := phaseRoles(f); !slices.Equal(got, []string{"research 1 timeout", "research 2 accepted"}) {
			t.Fatalf("phase attempts %v", got)
		}
	})
	t.Run("retries spent fail the run; resume runs it again", func(t *testing.T) {
		f := newRT(t)
		f.maxRounds = 1
		f.phases = [][2]string{{"research", "gem"}, {"plan", "cla"}}
		f.scripts["cla"] = "behavior: write\nbody: spec\nsteps:\n  - behavior: none\n  - {body: \"   \\n\"}\n  - {}\n"
		f.setup()
		sum := f.run()
		if sum.Status != walkie.StatusFailed || !strings.Contains(sum.Reason, "the plan phase: cla: malformed after 2 attempts (the file is empty)") || sum.Turns != 0 {
			t.Fatalf("%s after %d turns (%s)", sum.Status, sum.Turns, sum.Reason)
		}
		if err := walkie.Resume(f.file); err != nil {
			t.Fatal(err)
		}
		if sum := f.run(); sum.Status != walkie.StatusConverged {
			t.Fatalf("after resume: %s (%s)", sum.Status, sum.Reason)
		}
		if got := phaseRoles(f); !slices.Equal(got, []string{"research 1 accepted", "plan 1 no-turn", "plan 2 malformed", "plan 3 accepted"}) {
			t.Fatalf("phase attempts %v", got)
		}
	})
	t.Run("halted, then resumed", func(t *testing.T) {
		f := newRT(t)
		f.maxRounds = 1
		f.phases = [][2]string{{"research", "gem"}}
		f.scripts["gem"] = "behavior: write\nbody: notes\nsteps:\n  - delay: 30s\n  - {}\n"
		f.setup()
		done := make(chan controller.Summary, 1)
		go func() {
			sum, err := controller.Run(context.Background(), controller.Options{File: f.file, Config: f.cfg, Approve: true})
			if err != nil {
				t.Error(err)
			}
			done <- sum
		}()
		// Running, and past counting its invocation (so the next one takes
		// the script's second step).
		sessiontest.WaitFor(t, 30*time.Second, "the research phase running", func() bool {
			_, err := os.Stat(filepath.Join(f.dir, "state", "gem"))
			return f.exists("roundtable/running/phase-research.json") && err == nil
		})
		if err := walkie.Halt(f.file, "a person looks"); err != nil {
			t.Fatal(err)
		}
		if sum := <-done; sum.Status != walkie.StatusHalted {
			t.Fatalf("%s (%s)", sum.Status, sum.Reason)
		}
		if err := walkie.Resume(f.file); err != nil {
			t.Fatal(err)
		}
		if sum := f.run(); sum.Status != walkie.StatusConverged {
			t.Fatalf("after resume: %s (%s)", sum.Status, sum.Reason)
		}
		if got := phaseRoles(f); !slices.Equal(got, []string{"research 1 halted", "research 2 accepted"}) {
			t.Fatalf("phase attempts %v", got)
		}
	})
	t.Run("without approval the run stops; the file changed after approval stops it too", func(t *testing.T) {
		f := newRT(t)
		f.maxRounds = 2
		f.phases = [][2]string{{"plan", "cla"}}
		f.scripts["brook"] = "behavior: verdict\nverdicts:\n  - '{\"verdict\": \"request_changes\", \"objections\": [{\"rule\": \"§1\", \"failing_input\": \"x\", \"blocking\": true}]}'\n  - '{\"verdict\": \"approve\"}'\n"
		f.setup()
		if _, err := walkie.Approve(f.file); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		_, err := controller.Run(ctx, controller.Options{File: f.file, Config: f.cfg})
		var ie *walkie.InputError
		if !errors.Is(err, controller.ErrBadInput) || !errors.As(err, &ie) || !strings.Contains(ie.Msg, "awaits approval") || !strings.Contains(ie.Fix, "walkie phase approve") {
			t.Fatalf("err %v, want bad input awaiting approval", err)
		}
		if d, _ := walkie.Load(f.file); len(d.Entries) != 0 {
			t.Fatal("the record changed before the approval")
		}
		// Again without approval: the file is kept, the phase does not run again.
		if _, err := controller.Run(ctx, controller.Options{File: f.file, Config: f.cfg}); !errors.Is(err, controller.ErrBadInput) {
			t.Fatalf("second run: %v", err)
		}
		if n := strings.Count(f.prompts("cla", 0), "====="); n != 1 {
			t.Fatalf("the plan phase ran %d times", n)
		}
		if _, err := roundtable.ApprovePhase(f.file, "plan", roundtable.ApprovedByPerson); err != nil {
			t.Fatal(err)
		}
		if _, err := roundtable.ApprovePhase(f.file, "plan", roundtable.ApprovedByPerson); !errors.Is(err, roundtable.ErrPhaseApproved) {
			t.Fatalf("approved twice: %v", err)
		}
		if sum := f.run(func(o *controller.Options) { o.Once = true; o.Approve = false }); sum.Turns != 1 {
			t.Fatalf("%s after %d turns", sum.Status, sum.Turns)
		}
		spec := roundtable.PhasePath(f.stateDir(), "plan")
		if err := os.Chmod(spec, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(spec, []byte("§1 anything goes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = controller.Run(ctx, controller.Options{File: f.file, Config: f.cfg})
		if !errors.Is(err, controller.ErrBadInput) || !errors.As(err, &ie) || !strings.Contains(ie.Msg, "changed after approval") || ie.File != spec {
			t.Fatalf("err %v, want the changed spec refused", err)
		}
		if d, _ := walkie.Load(f.file); d.Progress().Turns != 1 {
			t.Fatal("a step ran on a changed spec")
		}
	})
}

// A phase whose agent reports no usage costs what nobody can tell, and
// the budget counts it as it counts any attempt of unknown cost (issue 26):
// with the implementer's $0.95 turn known, one unknown phase counts as
// $0.95 more, so a $1 budget stops the run before the first review.
func TestRoundtablePhaseOfUnknownCostCountsAgainstTheBudget(t *testing.T) {
	leakCheck(t)
	f := newRT(t)
	f.maxRounds = 1
	f.usage = true // claude-json: the phase's agent prints no result line
	f.extraFrontMatter = "budget_usd: 1\n"
	f.phases = [][2]string{{"research", "gem"}}
	f.scripts["ada"] = "usage: true\ncost_usd: 0.95\n"
	f.setup()
	sum := f.run()
	if sum.Status != walkie.StatusOverBudget || sum.Turns != 1 || !strings.Contains(sum.Reason, "counting 1 attempt of unknown cost as $0.95 each") {
		t.Fatalf("%s after %d turns (%s), want over-budget after the implementer's turn, counting the phase", sum.Status, sum.Turns, sum.Reason)
	}
	st, err := walkie.LoadState(f.stateDir())
	if err != nil {
		t.Fatal(err)
	}
	if st.UnknownCosts != 1 || !approx(st.CostUSD, 0.95) {
		t.Errorf("state: $%v known, %d unknown; want $0.95 and the phase's attempt unknown", st.CostUSD, st.UnknownCosts)
	}
	if f.started("brook") || f.started("cy") {
		t.Error("a reviewer ran past the budget")
	}
}

// A reviewer that leaves a named pipe where its verdict goes, or one that
// swaps files of its copy for a named pipe and a link to /dev/zero, makes
// nobody wait: the pipe is a malformed verdict, the swaps are discarded
// changes, and the run ends (issue 27, item 7).
func TestRoundtableReviewerLeavesAPipe(t *testing.T) {
	leakCheck(t)
	f := newRT(t)
	f.maxRounds = 1
	f.workspace = map[string]string{"a.txt": "a\n", "b.txt": "b\n"}
	f.commands = map[string]string{
		"brook": `mkfifo "$WALKIE_VERDICT"; sleep 1`,
		"cy":    `cd "$WALKIE_WORKSPACE" && rm a.txt b.txt && mkfifo a.txt && ln -s /dev/zero b.txt && printf '{"verdict": "approve"}' > "$WALKIE_VERDICT"`,
	}
	f.setup()
	done := make(chan controller.Summary, 1)
	go func() { done <- f.run() }()
	var sum controller.Summary
	select {
	case sum = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the run still waits after 2 minutes: a named pipe was opened")
	}
	if sum.Status != walkie.StatusFailed || !strings.Contains(sum.Reason, "brook (malformed)") {
		t.Fatalf("%s (%s), want failed on brook's malformed verdict", sum.Status, sum.Reason)
	}
	rr := f.round(1)
	brook, cy := rr.Reviews[0], rr.Reviews[1]
	for _, a := range brook.Attempts {
		if a.Outcome != walkie.OutcomeMalformed || !strings.Contains(a.Detail, "verdict.json is a named pipe, not a regular file") {
			t.Errorf("brook's attempt %d: %s (%s)", a.Attempt, a.Outcome, a.Detail)
		}
	}
	if want := []roundtable.Change{{Path: "a.txt", Kind: "removed"}, {Path: "b.txt", Kind: "modified"}}; cy.Outcome != walkie.OutcomeAccepted || !slices.Equal(cy.Discarded, want) {
		t.Errorf("cy: %s (%s), discarded %v, want %v", cy.Outcome, cy.Detail, cy.Discarded, want)
	}
}
