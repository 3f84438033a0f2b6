package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"gopkg.in/yaml.v3"
)

// The GitHub Action, its example workflow and the GitLab example are
// checked here: by actionlint (github.com/rhysd/actionlint, as a library)
// for what GitHub would refuse or misread, and against walkie review's
// own flags, so a renamed flag cannot leave them stale.

const (
	actionFile   = "../../scripts/github/action.yml"
	workflowFile = "../../scripts/github/examples/design-review.yml"
	gitlabFile   = "../../scripts/gitlab/walkie-review.gitlab-ci.yml"
)

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lint runs actionlint on one workflow of a project at root; shellcheck
// checks the run: scripts when it is installed.
func lint(t *testing.T, root, name string, content []byte) []*actionlint.Error {
	t.Helper()
	opts := &actionlint.LinterOptions{WorkingDir: root}
	if sc, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = sc
	}
	l, err := actionlint.NewLinter(&bytes.Buffer{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	proj, err := actionlint.NewProject(root)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(filepath.Join(root, ".github", "workflows", name), content, proj)
	if err != nil {
		t.Fatalf("actionlint %s: %v", name, err)
	}
	return errs
}

func describe(errs []*actionlint.Error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Error() + "\n")
	}
	return b.String()
}

// project is a repository holding the action at scripts/github, as a
// workflow of the user's own repository would see it with uses: ./…
func project(t *testing.T, action []byte) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{".git", ".github/workflows", "scripts/github"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "scripts/github/action.yml"), action, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func localWorkflow(t *testing.T) []byte {
	wf := readFile(t, workflowFile)
	if !bytes.Contains(wf, []byte("uses: OWNER/walkie/scripts/github@REF")) {
		t.Fatal("the example workflow no longer uses OWNER/walkie/scripts/github@REF")
	}
	return bytes.ReplaceAll(wf, []byte("OWNER/walkie/scripts/github@REF"), []byte("./scripts/github"))
}

// The example workflow as a user copies it, and with the action resolved
// locally, so actionlint checks every with: key against the action's
// inputs.
func TestWorkflowLints(t *testing.T) {
	action := readFile(t, actionFile)
	root := project(t, action)
	if errs := lint(t, root, "design-review.yml", readFile(t, workflowFile)); len(errs) > 0 {
		t.Errorf("the example workflow:\n%s", describe(errs))
	}
	if errs := lint(t, root, "design-review.yml", localWorkflow(t)); len(errs) > 0 {
		t.Errorf("the example workflow with the action resolved:\n%s", describe(errs))
	}
	// The check sees the action: an input it lacks is an error.
	bad := bytes.Replace(localWorkflow(t), []byte("max-rounds:"), []byte("max-round:"), 1)
	if errs := lint(t, root, "design-review.yml", bad); !strings.Contains(describe(errs), `input "max-round" is not defined`) {
		t.Errorf("a misspelt input passed:\n%s", describe(errs))
	}
}

// actionAsWorkflow makes the composite action's steps a workflow job,
// its inputs those of a reusable workflow: actionlint then checks every
// expression and script of the action as it checks a workflow's.
func actionAsWorkflow(t *testing.T, action []byte) ([]byte, map[string]map[string]any) {
	t.Helper()
	var a struct {
		Inputs  map[string]map[string]any `yaml:"inputs"`
		Outputs map[string]map[string]any `yaml:"outputs"`
		Runs    struct {
			Using string `yaml:"using"`
			Steps []any  `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(action, &a); err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" || len(a.Runs.Steps) == 0 {
		t.Fatalf("runs: %+v", a.Runs)
	}
	inputs := map[string]any{}
	for name, in := range a.Inputs {
		inputs[name] = map[string]any{"type": "string", "required": false, "description": in["description"]}
	}
	outputs := map[string]any{}
	for name, out := range a.Outputs {
		outputs[name] = map[string]any{"description": out["description"], "value": strings.ReplaceAll(out["value"].(string), "steps.", "jobs.action.outputs.steps_")}
	}
	wf := map[string]any{
		"name": "the action's steps",
		"on":   map[string]any{"workflow_call": map[string]any{"inputs": inputs}},
		"jobs": map[string]any{"action": map[string]any{"runs-on": "ubuntu-latest", "steps": a.Runs.Steps}},
	}
	b, err := yaml.Marshal(wf)
	if err != nil {
		t.Fatal(err)
	}
	return b, a.Inputs
}

func TestActionLints(t *testing.T) {
	action := readFile(t, actionFile)
	root := project(t, action)
	wf, _ := actionAsWorkflow(t, action)
	if errs := lint(t, root, "action-steps.yml", wf); len(errs) > 0 {
		t.Errorf("the action's steps:\n%s", describe(errs))
	}
	// An expression naming an input the action lacks is caught.
	bad, _ := actionAsWorkflow(t, bytes.Replace(action, []byte("${{ inputs.max-rounds }}"), []byte("${{ inputs.max-round }}"), 1))
	if errs := lint(t, root, "action-steps.yml", bad); !strings.Contains(describe(errs), "max-round") {
		t.Errorf("a misspelt input in an expression passed:\n%s", describe(errs))
	}
	// Every output reads a step that exists.
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+id: (\S+)$`).FindAllSubmatch(action, -1) {
		ids[string(m[1])] = true
	}
	for _, m := range regexp.MustCompile(`steps\.([\w-]+)\.outputs\.([\w-]+)`).FindAllSubmatch(action, -1) {
		if !ids[string(m[1])] {
			t.Errorf("an output reads step %q, which the action does not have", m[1])
		}
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Log("shellcheck is not installed: actionlint checked the action's expressions, not its scripts")
	}
}

// reviewFlags are walkie review's flag names.
func reviewFlags() []string {
	var names []string
	for _, f := range reviewCommand(newFactory(nil, io.Discard, io.Discard), nil).Flags {
		names = append(names, f.Names()...)
	}
	return names
}

// Each input of the action that is a flag of walkie review is passed as
// that flag, and every flag the scripts pass exists.
func TestActionAndExamplesUseRealFlags(t *testing.T) {
	action := readFile(t, actionFile)
	_, inputs := actionAsWorkflow(t, action)
	flags := reviewFlags()
	notFlags := []string{"docs", "anthropic-api-key", "openai-api-key", "gemini-api-key", "github-token", "upload-artifact", "artifact-name"}
	for name := range inputs {
		if slices.Contains(notFlags, name) {
			continue
		}
		if !slices.Contains(flags, name) {
			t.Errorf("input %s is no flag of walkie review", name)
		}
		if !bytes.Contains(action, []byte("--"+name+" ")) {
			t.Errorf("input %s is not passed as --%s", name, name)
		}
	}
	for file, content := range map[string][]byte{actionFile: action, gitlabFile: readFile(t, gitlabFile)} {
		for _, line := range strings.Split(string(content), "\n") {
			if !strings.Contains(line, "walkie review") && !strings.Contains(line, "args=(review") && !strings.Contains(line, "args+=(") && !strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			for _, m := range regexp.MustCompile(`(?:^|[\s(])--([a-z][a-z-]*)`).FindAllStringSubmatch(line, -1) {
				if !slices.Contains(flags, m[1]) {
					t.Errorf("%s passes --%s, which walkie review does not have: %s", filepath.Base(file), m[1], strings.TrimSpace(line))
				}
			}
		}
	}
}

// The action's review script, run by bash with a stand-in walkie: the
// documents reach walkie one per argument and unexpanded (the pattern is
// walkie's to match against the diff), empty inputs add no flag, and the
// step's exit code and output are walkie's.
func TestActionReviewScript(t *testing.T) {
	var a struct {
		Runs struct {
			Steps []struct {
				ID  string `yaml:"id"`
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(readFile(t, actionFile), &a); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(a.Runs.Steps, func(s struct {
		ID  string `yaml:"id"`
		Run string `yaml:"run"`
	}) bool {
		return s.ID == "review"
	})
	if i < 0 {
		t.Fatal("no step with id review")
	}
	dir := t.TempDir()
	stub := "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done > \"$ARGS_FILE\"\nexit 20\n"
	if err := os.WriteFile(filepath.Join(dir, "walkie"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	// A file the pattern would match if the shell expanded it.
	if err := os.MkdirAll(filepath.Join(dir, "docs/design"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "docs/design/x.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-e", "-c", a.Runs.Steps[i].Run)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + dir + ":" + os.Getenv("PATH"), "ARGS_FILE=" + filepath.Join(dir, "args"), "GITHUB_OUTPUT=" + filepath.Join(dir, "out"),
		"RUNNER_TEMP=/rt", "WALKIE_DOCS=docs/design/*.md\n  docs/extra.md ", "WALKIE_BASE=", "WALKIE_AGENTS=claude,codex", "WALKIE_MODE=debate",
		"WALKIE_MAX_ROUNDS=3", "WALKIE_BUDGET=2.5", "WALKIE_FAIL_ON=disagreement", "WALKIE_CONFIG="}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 20 {
		t.Fatalf("the step: %v, want exit 20\n%s", err, out)
	}
	want := "[review][docs/design/*.md][docs/extra.md][--agents][claude,codex][--mode][debate][--max-rounds][3][--fail-on][disagreement][--out][/rt/walkie-review][--budget][2.5]"
	if got := string(readFile(t, filepath.Join(dir, "args"))); got != want {
		t.Errorf("walkie got\n%s\nwant\n%s", got, want)
	}
	if got := string(readFile(t, filepath.Join(dir, "out"))); got != "exit-code=20\n" {
		t.Errorf("output %q", got)
	}
}

// The GitLab example is a job GitLab can read: YAML, the keys it uses,
// the report kept as an artifact even when the review fails.
func TestGitLabExample(t *testing.T) {
	var jobs map[string]struct {
		Image        string            `yaml:"image"`
		Rules        []map[string]any  `yaml:"rules"`
		Variables    map[string]string `yaml:"variables"`
		BeforeScript []string          `yaml:"before_script"`
		Script       []string          `yaml:"script"`
		AfterScript  []string          `yaml:"after_script"`
		Artifacts    struct {
			When     string   `yaml:"when"`
			Name     string   `yaml:"name"`
			Paths    []string `yaml:"paths"`
			ExpireIn string   `yaml:"expire_in"`
		} `yaml:"artifacts"`
		Interruptible bool   `yaml:"interruptible"`
		Timeout       string `yaml:"timeout"`
		Stage         string `yaml:"stage"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, gitlabFile)))
	dec.KnownFields(true)
	if err := dec.Decode(&jobs); err != nil {
		t.Fatal(err)
	}
	j, ok := jobs["walkie-review"]
	if !ok || j.Artifacts.When != "always" || len(j.Artifacts.Paths) == 0 || !j.Interruptible || j.Variables["GIT_DEPTH"] != "0" {
		t.Fatalf("%+v", jobs)
	}
	if !strings.Contains(strings.Join(j.Script, "\n"), "walkie review 'docs/design/**/*.md' --base \"$CI_MERGE_REQUEST_DIFF_BASE_SHA\"") {
		t.Errorf("script: %v", j.Script)
	}
}
