//go:build linux

package roundtable_test

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// toolResults counts the tool results a model request carries: how far
// into its session the CLI is.
func toolResults(r *modelserver.Request) int {
	raw := string(r.Raw)
	switch r.Vendor {
	case modelserver.Anthropic:
		return strings.Count(raw, `"tool_result"`)
	case modelserver.OpenAI:
		return strings.Count(raw, `"function_call_output"`)
	}
	return strings.Count(raw, `"functionResponse"`)
}

// The evaluator round table with the real CLIs, each as walkie's preset
// runs it, talking to the fake model server: claude implements, codex and
// gemini review. The "model" behind each answers from what the CLI sends
// (which round its prompt names, how many tool results it has had), so
// every file change, verdict and turn is made by the CLI's own tools in
// the sandbox walkie gave it.
func TestRoundtableWithRealCLIs(t *testing.T) {
	leakCheck(t)
	claude, codex, gemini := sessiontest.RealCLI(t, "claude"), sessiontest.RealCLI(t, "codex"), sessiontest.RealCLI(t, "gemini")
	python := needPython(t)
	if testing.Short() {
		t.Skip("slow: six real CLI sessions")
	}

	blocker := `{"verdict":"request_changes","objections":[{"summary":"floats lose integers above 2**53","rule":"Rule 1: results are exact integers","failing_input":"2 ** 53 + 1","blocking":true}]}`
	approve := `{"verdict":"approve","objections":[]}`
	srv := modelserver.Start(t, modelserver.Script{Func: func(r *modelserver.Request) (modelserver.Reply, bool) {
		n := toolResults(r)
		round2 := r.HasText("## Turn 4 · claude") || r.HasText("This is round 2 of")
		switch {
		case r.Vendor == modelserver.Anthropic && n == 0:
			code := "def evaluate(expr):\\n    return float(eval(expr, {'__builtins__': {}}))\\n"
			if round2 {
				code = "def evaluate(expr):\\n    return int(eval(expr, {'__builtins__': {}}))\\n"
			}
			return modelserver.Shell("printf \"" + code + "\" > work/evaluate.py"), true
		case r.Vendor == modelserver.Anthropic && n == 1:
			turn, body := 1, "evaluate() computes in floats."
			if round2 {
				turn, body = 4, "evaluate() computes in integers now, so 2 ** 53 + 1 is exact."
			}
			return modelserver.Shell(fmt.Sprintf("printf '\\n## Turn %d · claude\\n%s\\n' >> rt.walkie.md", turn, body)), true
		case n == 0: // a reviewer's first call
			v := approve
			if r.Vendor == modelserver.OpenAI && !round2 {
				v = blocker
			}
			return modelserver.Shell("printf '%s\\n' '" + v + "' > \"$WALKIE_VERDICT\""), true
		}
		return modelserver.Text("Done."), true
	}})

	dir := t.TempDir()
	file := filepath.Join(dir, "rt.walkie.md")
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "hidden"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hidden", "test.py"), []byte("import os, sys\nsys.path.insert(0, os.getcwd())\nfrom evaluate import evaluate\nassert evaluate('6 * 7') == 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`---
walkie: 1
id: rt
mode: roundtable
implementer: claude
reviewers: [codex, gemini]
grader: [%s, "{dir}/hidden/test.py"]
workspace: work
max_rounds: 3
---
# Briefing
Write evaluate(expr) in work/evaluate.py, evaluating integer arithmetic.
Rule 1: results are exact integers, however large.
`, python)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := realCLIConfig(t, dir, srv.URL, claude, codex, gemini)
	f := &rtFixture{t: t, dir: dir, file: file, work: filepath.Join(dir, "work"), cfg: cfg}
	sum := f.run()
	if sum.Status != walkie.StatusConverged || sum.Turns != 6 {
		for _, rec := range sum.Attempts {
			t.Logf("turn %d %s attempt %d: %s (%s)", rec.Turn, rec.Agent, rec.Attempt, rec.Outcome, rec.Detail)
		}
		t.Fatalf("status %s after %d turns (%s), want converged in round 2\n%s", sum.Status, sum.Turns, sum.Reason, f.record())
	}
	for _, rec := range sum.Attempts {
		if rec.Outcome != walkie.OutcomeAccepted || rec.Attempt != 1 {
			t.Errorf("turn %d %s attempt %d: %s (%s)", rec.Turn, rec.Agent, rec.Attempt, rec.Outcome, rec.Detail)
		}
	}
	r1 := f.round(1)
	if r1.Decision != roundtable.DecisionNextRound || !r1.Grader.Passed() || r1.Reviews[0].Verdict.Approves || !r1.Reviews[1].Verdict.Approves {
		t.Fatalf("round 1: %+v", r1)
	}
	if b, _ := os.ReadFile(filepath.Join(f.work, "evaluate.py")); !strings.Contains(string(b), "int(eval") {
		t.Fatalf("the workspace after round 2: %q", b)
	}
	// The implementer's second session was told of codex's objection; no
	// reviewer request ever carried the grader's verdict.
	var told bool
	for _, r := range srv.ModelRequests(modelserver.Anthropic) {
		told = told || (r.HasText("## Turn 4 · claude") && r.HasText(`failing input "2 ** 53 + 1"`))
	}
	if !told {
		t.Error("claude's round-2 prompt does not carry codex's blocking objection")
	}
	for _, v := range []modelserver.Vendor{modelserver.OpenAI, modelserver.Gemini} {
		for _, r := range srv.ModelRequests(v) {
			if r.HasText("hidden tests") {
				t.Errorf("a %s reviewer request mentions the hidden tests", v)
			}
		}
	}
	rep, _, err := controller.LoadReport(file, controller.StandingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scores[0].BlockedGraderPassed != 1 || rep.Scores[0].Agreed != 1 || rep.Scores[1].Agreed != 2 {
		t.Errorf("reviewer scores %+v", rep.Scores)
	}
	for _, a := range rep.Agents {
		t.Logf("%s (%s): %d sessions, $%.4f (estimated %d, unknown %d)", a.Agent, a.Role, a.Sessions, a.CostUSD, a.Estimated, a.Unknown)
	}
}

// The files a claude session is told to write, as its prompt names them.
var (
	planPathRe    = regexp.MustCompile(`/[^\s"\\]*walkie-phase-[^/\s"\\]+/phases/plan\.md`)
	verdictPathRe = regexp.MustCompile(`/[^\s"\\]*walkie-review-[^/\s"\\]+/verdict\.json`)
)

// realCLIConfig configures claude, codex and gemini as walkie's presets
// run them, each talking to the fake model server at url.
func realCLIConfig(t *testing.T, dir, url, claude, codex, gemini string) *config.Config {
	t.Helper()
	codexEnv, err := modelserver.WriteCodexHome(t.TempDir(), url)
	if err != nil {
		t.Fatal(err)
	}
	geminiEnv, err := modelserver.WriteGeminiHome(t.TempDir(), url)
	if err != nil {
		t.Fatal(err)
	}
	envYAML := func(kvs []string) string {
		var b strings.Builder
		for _, kv := range kvs {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&b, "      %s: %q\n", k, v)
		}
		return b.String()
	}
	cfgText := fmt.Sprintf(`defaults:
  timeout: 2m
  stall: 90s
  grace: 1s
  sandbox_read: [%q]
agents:
  claude:
    command: [%s, -p, "{prompt}", --output-format, json, --permission-mode, acceptEdits, --allowedTools, "Read,Grep,Glob,Edit,Write,Bash(cat:*),Bash(printf:*)", --no-session-persistence]
    env:
%s  codex:
    command: [%s, exec, --skip-git-repo-check, -s, workspace-write, --json, --ephemeral, -C, "{dir}", "{prompt}"]
    env:
%s  gemini:
    home: inherit
    command: [%s, -p, "{prompt}", -o, json, --approval-mode, yolo, --skip-trust, -m, %s]
    env:
%s`, cmp.Or(pythonRoot(), "/usr"), claude, envYAML(modelserver.ClaudeEnv(url)), codex, envYAML(codexEnv), gemini, modelserver.GeminiModel, envYAML(append(geminiEnv, "GEMINI_CLI_TRUST_WORKSPACE=true")))
	cfg, err := config.Parse(filepath.Join(dir, "walkie.yaml"), []byte(cfgText))
	if err != nil {
		t.Fatalf("%v\n%s", err, cfgText)
	}
	return cfg
}

// The round table with phases, every session a real CLI as walkie's
// preset runs it, talking to the fake model server: gemini researches,
// claude writes the spec, codex implements, claude and gemini review. The
// "model" behind each answers from the prompt the CLI sends it (which
// role, which round), so every file is written by the CLI's own tools in
// the sandbox or directory walkie gave it.
func TestRoundtableWithPhasesAndRealCLIs(t *testing.T) {
	leakCheck(t)
	claude, codex, gemini := sessiontest.RealCLI(t, "claude"), sessiontest.RealCLI(t, "codex"), sessiontest.RealCLI(t, "gemini")
	python := needPython(t)
	if testing.Short() {
		t.Skip("slow: eight real CLI sessions")
	}
	notes := "# Research\\n\\nIEEE 754 doubles carry 53 bits: 2 ** 53 + 1 is not a double. Python ints are exact.\\n"
	spec := "# Spec\\n\\n§1 evaluate(expr) evaluates integer arithmetic.\\n§2 Results are exact integers, however large.\\n"
	blocker := `{"verdict":"request_changes","objections":[{"summary":"floats lose integers above 2**53","rule":"spec §2: results are exact integers","failing_input":"2 ** 53 + 1","blocking":true}]}`
	approve := `{"verdict":"approve","objections":[]}`
	srv := modelserver.Start(t, modelserver.Script{Func: func(r *modelserver.Request) (modelserver.Reply, bool) {
		n := toolResults(r)
		round2 := r.HasText("## Turn 4 · codex") || r.HasText("This is round 2 of")
		switch {
		case n > 0 && !(r.Vendor == modelserver.OpenAI && n == 1 && r.HasText("the implementer in a round table")):
			return modelserver.Text("Done."), true
		case r.HasText("the researcher of a round table"):
			return modelserver.Shell(`printf '` + notes + `' > "$WALKIE_OUTPUT"`), true
		case r.HasText("the planner of a round table"):
			// claude's Bash(printf:*) will not redirect to a variable:
			// its Write tool writes the file the prompt names.
			out := planPathRe.FindString(string(r.Raw))
			return modelserver.Reply{Tool: &modelserver.ToolCall{Name: "Write", Args: map[string]any{"file_path": out, "content": strings.ReplaceAll(spec, `\\n`, "\n")}}}, true
		case r.HasText("the implementer in a round table") && n == 0:
			code := "def evaluate(expr):\\n    return float(eval(expr, {'__builtins__': {}}))\\n"
			if round2 {
				code = "def evaluate(expr):\\n    return int(eval(expr, {'__builtins__': {}}))\\n"
			}
			return modelserver.Shell("printf \"" + code + "\" > work/evaluate.py"), true
		case r.HasText("the implementer in a round table"):
			turn, body := 1, "evaluate() computes in floats."
			if round2 {
				turn, body = 4, "evaluate() computes in integers now, as spec §2 says."
			}
			return modelserver.Shell(fmt.Sprintf("printf '\\n## Turn %d · codex\\n%s\\n' >> rt.walkie.md", turn, body)), true
		case r.HasText("a reviewer in a round table"):
			if r.Vendor == modelserver.Anthropic {
				v := approve
				if !round2 {
					v = blocker
				}
				return modelserver.Reply{Tool: &modelserver.ToolCall{Name: "Write", Args: map[string]any{"file_path": verdictPathRe.FindString(string(r.Raw)), "content": v + "\n"}}}, true
			}
			return modelserver.Shell("printf '%s\\n' '" + approve + "' > \"$WALKIE_VERDICT\""), true
		}
		return modelserver.Text("Done."), true
	}})

	dir := t.TempDir()
	file := filepath.Join(dir, "rt.walkie.md")
	for _, d := range []string{"work", "hidden"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "hidden", "test.py"), []byte("import os, sys\nsys.path.insert(0, os.getcwd())\nfrom evaluate import evaluate\nassert evaluate('6 * 7') == 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`---
walkie: 2
id: rt
mode: roundtable
implementer: codex
reviewers: [claude, gemini]
phases:
  - research: gemini
  - plan: claude
grader: [%s, "{dir}/hidden/test.py"]
workspace: work
max_rounds: 3
---
# Briefing
Write evaluate(expr) in work/evaluate.py, evaluating integer arithmetic.
`, python)), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &rtFixture{t: t, dir: dir, file: file, work: filepath.Join(dir, "work"), cfg: realCLIConfig(t, dir, srv.URL, claude, codex, gemini)}
	sum := f.run()
	if sum.Status != walkie.StatusConverged || sum.Turns != 6 {
		for _, rec := range sum.Attempts {
			b, _ := os.ReadFile(filepath.Join(f.stateDir(), rec.Transcript.Text))
			t.Logf("turn %d %s (%s) attempt %d: %s (%s); its transcript ends:\n%s", rec.Turn, rec.Agent, rec.Role, rec.Attempt, rec.Outcome, rec.Detail,
				b[max(0, len(b)-1500):])
		}
		t.Fatalf("status %s after %d turns (%s), want converged in round 2\n%s", sum.Status, sum.Turns, sum.Reason, f.record())
	}
	for _, rec := range sum.Attempts {
		if rec.Outcome != walkie.OutcomeAccepted || rec.Attempt != 1 {
			t.Errorf("turn %d %s (%s) attempt %d: %s (%s)", rec.Turn, rec.Agent, rec.Role, rec.Attempt, rec.Outcome, rec.Detail)
		}
	}
	// The phases' files are what the CLIs' shell tools wrote, pinned.
	for kind, want := range map[string]string{"research": "IEEE 754 doubles carry 53 bits", "plan": "§2 Results are exact integers"} {
		b, err := os.ReadFile(roundtable.PhasePath(f.stateDir(), kind))
		if err != nil || !strings.Contains(string(b), want) {
			t.Fatalf("the %s phase's file: %q, %v", kind, b, err)
		}
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if pins := roundtable.PhasePins(d); len(pins) != 2 {
		t.Fatalf("pins %+v", pins)
	}
	// claude planned from gemini's notes; codex and the reviewers were
	// pointed at the spec; codex heard claude's objection citing it.
	var planned, toldSpec, heard bool
	for _, r := range srv.ModelRequests(modelserver.Anthropic) {
		planned = planned || r.HasText("the planner of a round table") && r.HasText("the research notes by gemini")
	}
	for _, r := range srv.ModelRequests(modelserver.OpenAI) {
		toldSpec = toldSpec || r.HasText("The approved spec") && r.HasText("phases/plan.md")
		heard = heard || r.HasText("## Turn 4 · codex") && r.HasText(`rule "spec §2: results are exact integers"`)
	}
	if !planned || !toldSpec || !heard {
		t.Errorf("planned from the notes %v, implementer told of the spec %v, heard the objection %v", planned, toldSpec, heard)
	}
	for _, v := range []modelserver.Vendor{modelserver.Anthropic, modelserver.Gemini} {
		for _, r := range srv.ModelRequests(v) {
			if r.HasText("a reviewer in a round table") && (!r.HasText("The approved spec the work must follow") || r.HasText("hidden tests")) {
				t.Errorf("a %s reviewer request does not cite the spec, or mentions the hidden tests", v)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.work, "evaluate.py")); !strings.Contains(string(b), "int(eval") {
		t.Fatalf("the workspace after round 2: %q", b)
	}
	rep, _, err := controller.LoadReport(file, controller.StandingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Phases {
		if p.State != roundtable.PhaseApproved || p.DurationMS <= 0 || p.CostUSD <= 0 {
			t.Errorf("phase %+v: want approved, with a time and a cost", p)
		}
		t.Logf("%s by %s: %d ms, $%.4f", p.Phase, p.Agent, p.DurationMS, p.CostUSD)
	}
}
