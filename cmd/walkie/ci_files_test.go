package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"gopkg.in/yaml.v3"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/review"
)

// The GitHub Action, its example workflows, the project's own workflows
// and the GitLab example are checked here: by actionlint
// (github.com/rhysd/actionlint, as a library) for what GitHub would refuse
// or misread, and against walkie review's own flags, so a renamed flag
// cannot leave them stale. The action's scripts run here too, with
// stand-ins for walkie and the GitHub API.

const (
	actionFile  = "../../scripts/github/action.yml"
	examplesDir = "../../scripts/github/examples"
	gitlabFile  = "../../scripts/gitlab/walkie-review.gitlab-ci.yml"
	// The project's own workflows, which GitHub runs from there only.
	workflowsDir = "../../.github/workflows"
)

// actionUses is how the examples name the action: this repository, at a
// release tag.
var actionUses = regexp.MustCompile(`uses: walkie-sh/walkie/scripts/github@v\d+\.\d+\.\d+\n`)

// yamlFiles lists the .yml files of a folder.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows in %s (%v)", dir, err)
	}
	return files
}

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

func localWorkflow(t *testing.T, file string) []byte {
	wf := readFile(t, file)
	if !actionUses.Match(wf) {
		t.Fatalf("%s no longer uses walkie-sh/walkie/scripts/github@vX.Y.Z", file)
	}
	return actionUses.ReplaceAll(wf, []byte("uses: ./scripts/github\n"))
}

// Each example workflow as a user copies it, and with the action resolved
// locally, so actionlint checks every with: key against the action's
// inputs.
func TestWorkflowLints(t *testing.T) {
	action := readFile(t, actionFile)
	root := project(t, action)
	for _, file := range yamlFiles(t, examplesDir) {
		name := filepath.Base(file)
		if errs := lint(t, root, name, readFile(t, file)); len(errs) > 0 {
			t.Errorf("the example %s:\n%s", name, describe(errs))
		}
		if errs := lint(t, root, name, localWorkflow(t, file)); len(errs) > 0 {
			t.Errorf("the example %s with the action resolved:\n%s", name, describe(errs))
		}
		// The check sees the action: an input it lacks is an error.
		bad := bytes.Replace(localWorkflow(t, file), []byte("max-rounds:"), []byte("max-round:"), 1)
		if errs := lint(t, root, name, bad); !strings.Contains(describe(errs), `input "max-round" is not defined`) {
			t.Errorf("a misspelt input in %s passed:\n%s", name, describe(errs))
		}
	}
}

// The project's own workflows (CI on ubuntu and macOS, the release) lint
// in the repository they live in, and the check would see a mistake.
func TestProjectWorkflowsLint(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range yamlFiles(t, workflowsDir) {
		name := filepath.Base(file)
		content := readFile(t, file)
		if errs := lint(t, root, name, content); len(errs) > 0 {
			t.Errorf("%s:\n%s", name, describe(errs))
		}
		bad := bytes.Replace(content, []byte("runs-on: "), []byte("runs-on: ${{ matrix.nosuch }}\n    x-"), 1)
		if errs := lint(t, root, name, bad); len(errs) == 0 {
			t.Errorf("a broken %s passed", name)
		}
	}
	ci := string(readFile(t, filepath.Join(workflowsDir, "ci.yml")))
	for _, want := range []string{"ubuntu-latest", "macos-latest", "run: make test"} {
		if !strings.Contains(ci, want) {
			t.Errorf("ci.yml has no %q", want)
		}
	}
}

// The comment trigger answers only a comment on a pull request that
// starts with the command, from an author the repository trusts, and
// refuses a fork before its code is checked out.
func TestCommentExampleTrusts(t *testing.T) {
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			If    string `yaml:"if"`
			Steps []struct {
				ID   string         `yaml:"id"`
				If   string         `yaml:"if"`
				Uses string         `yaml:"uses"`
				With map[string]any `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(examplesDir, "review-on-comment.yml")), &wf); err != nil {
		t.Fatal(err)
	}
	if _, ok := wf.On["issue_comment"]; !ok || len(wf.On) != 1 {
		t.Errorf("on: %v", wf.On)
	}
	job := wf.Jobs["review"]
	for _, want := range []string{"github.event.issue.pull_request", "startsWith(github.event.comment.body, '/walkie review')",
		`fromJSON('["OWNER", "MEMBER", "COLLABORATOR"]')`, "github.event.comment.author_association"} {
		if !strings.Contains(job.If, want) {
			t.Errorf("the job's if has no %s: %s", want, job.If)
		}
	}
	for _, untrusted := range []string{"CONTRIBUTOR", "FIRST_TIME", "NONE"} {
		if strings.Contains(job.If, untrusted) {
			t.Errorf("the job answers %s: %s", untrusted, job.If)
		}
	}
	refused, checkout := -1, -1
	for i, st := range job.Steps {
		if strings.Contains(st.If, "steps.pr.outputs.fork != 'false'") {
			refused = i
		}
		if strings.HasPrefix(st.Uses, "actions/checkout@") {
			checkout = i
		}
		if strings.HasPrefix(st.Uses, "walkie-sh/walkie/scripts/github@") && st.With["pull-request"] != "${{ github.event.issue.number }}" {
			t.Errorf("the action is not told the pull request: %v", st.With)
		}
	}
	if refused < 0 || checkout < refused {
		t.Errorf("a fork is not refused before the checkout (steps %d, %d)", refused, checkout)
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
	notFlags := []string{"docs", "anthropic-api-key", "claude-code-oauth-token", "use-bedrock", "aws-region", "use-vertex",
		"vertex-project-id", "vertex-region", "openai-api-key", "gemini-api-key", "claude-model", "codex-model", "gemini-model",
		"pull-request", "version", "build-from-source", "install-clis", "github-token", "upload-artifact", "artifact-name"}
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

// actionStep is the run: script of the action's step with the id.
func actionStep(t *testing.T, id string) string {
	t.Helper()
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
	for _, st := range a.Runs.Steps {
		if st.ID == id {
			return st.Run
		}
	}
	t.Fatalf("the action has no step with id %s", id)
	return ""
}

// The action's review script, run by bash with a stand-in walkie: the
// documents reach walkie one per argument and unexpanded (the pattern is
// walkie's to match against the diff), empty inputs add no flag and set
// no variable, a pull request read from the API is the event walkie
// reads, and the step's exit code and output are walkie's.
func TestActionReviewScript(t *testing.T) {
	dir := t.TempDir()
	stub := "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done > \"$ARGS_FILE\"\nenv > \"$ARGS_FILE.env\"\nexit 20\n"
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
	cmd := exec.Command("bash", "-e", "-c", actionStep(t, "review"))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + dir + ":" + os.Getenv("PATH"), "ARGS_FILE=" + filepath.Join(dir, "args"), "GITHUB_OUTPUT=" + filepath.Join(dir, "out"),
		"RUNNER_TEMP=/rt", "WALKIE_DOCS=docs/design/*.md\n  docs/extra.md ", "WALKIE_BASE=", "WALKIE_AGENTS=claude,codex", "WALKIE_MODE=debate",
		"WALKIE_MAX_ROUNDS=3", "WALKIE_BUDGET=2.5", "WALKIE_FAIL_ON=disagreement", "WALKIE_CONFIG=/rt/walkie-action.yaml",
		"WALKIE_EVENT_PATH=/rt/walkie-event.json", "GITHUB_EVENT_PATH=/home/runner/_temp/_github_workflow/event.json",
		"ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat-x", "CLAUDE_CODE_USE_BEDROCK=", "AWS_REGION=", "OPENAI_API_KEY=sk-y"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 20 {
		t.Fatalf("the step: %v, want exit 20\n%s", err, out)
	}
	want := "[review][docs/design/*.md][docs/extra.md][--agents][claude,codex][--mode][debate][--max-rounds][3][--fail-on][disagreement][--out][/rt/walkie-review][--budget][2.5][--config][/rt/walkie-action.yaml]"
	if got := string(readFile(t, filepath.Join(dir, "args"))); got != want {
		t.Errorf("walkie got\n%s\nwant\n%s", got, want)
	}
	if got := string(readFile(t, filepath.Join(dir, "out"))); got != "exit-code=20\n" {
		t.Errorf("output %q", got)
	}
	env := strings.Split(string(readFile(t, filepath.Join(dir, "args.env"))), "\n")
	for _, kv := range []string{"GITHUB_EVENT_PATH=/rt/walkie-event.json", "CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat-x", "OPENAI_API_KEY=sk-y"} {
		if !slices.Contains(env, kv) {
			t.Errorf("walkie's environment has no %s", kv)
		}
	}
	for _, kv := range env {
		for _, empty := range []string{"ANTHROPIC_API_KEY=", "CLAUDE_CODE_USE_BEDROCK=", "AWS_REGION="} {
			if strings.HasPrefix(kv, empty) {
				t.Errorf("walkie's environment sets %s", kv)
			}
		}
	}
}

// The release the action restored from the cache goes on PATH only when
// it says it is the release asked for.
func TestActionChecksTheCachedRelease(t *testing.T) {
	for _, c := range []struct {
		says string
		ok   bool
	}{
		{"walkie v0.1.0", true},
		{"walkie v0.0.9", false},
		{"walkie v0.1.0-rc.1", false},
	} {
		dir := t.TempDir()
		stub := "#!/bin/sh\necho '" + c.says + "'\necho 'commit abc'\n"
		if err := os.WriteFile(filepath.Join(dir, "walkie"), []byte(stub), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("bash", "-e", "-c", actionStep(t, "path"))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "VERSION=v0.1.0", "BIN_DIR=" + dir, "GITHUB_PATH=" + filepath.Join(dir, "path")}
		out, err := cmd.CombinedOutput()
		onPath, _ := os.ReadFile(filepath.Join(dir, "path"))
		if c.ok != (err == nil) || c.ok != (string(onPath) == dir+"\n") {
			t.Errorf("a cached walkie saying %q: %v, PATH %q\n%s", c.says, err, onPath, out)
		}
	}
}

// prepare runs the action's first step with the inputs given as the
// action passes them, and returns its outputs (nil and the message when
// it refuses).
func prepare(t *testing.T, inputs ...string) (map[string]string, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("../../scripts/github/prepare.sh")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "GITHUB_OUTPUT=" + filepath.Join(dir, "out"), "RUNNER_TEMP=" + dir,
		"RUNNER_TOOL_CACHE=/opt/hostedtoolcache"}, inputs...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Fatalf("prepare.sh: %v, want exit 0 or 2\n%s", err, out)
		}
		return nil, string(out)
	}
	outputs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(dir, "out")))), "\n") {
		k, v, _ := strings.Cut(line, "=")
		outputs[k] = v
	}
	return outputs, string(out)
}

// The action's inputs, read: which release it fetches, which pinned CLIs
// it installs (and their cache key), and the config the model and cloud
// inputs become; bad input is refused before anything is downloaded.
func TestActionPrepare(t *testing.T) {
	pins := map[string]string{}
	env, err := exec.Command("env", "-i", "bash", "-c", "set -a; source ../../scripts/versions.env; env").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(env), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		pins[k] = v
	}
	cases := []struct {
		name    string
		inputs  []string
		want    map[string]string
		refused string
	}{
		{name: "at a commit: the release versions.env names", inputs: []string{"WALKIE_ACTION_REF=3f1c2b9a", "WALKIE_AGENTS=claude,codex"},
			want: map[string]string{"version": pins["WALKIE_VERSION"], "clis": "claude codex", "config": "",
				"clis-key": "claude-" + pins["CLAUDE_VERSION"] + "_codex-" + pins["CODEX_VERSION"]}},
		{name: "at a release tag: that release", inputs: []string{"WALKIE_ACTION_REF=v1.2.3", "WALKIE_AGENTS=gemini"},
			want: map[string]string{"version": "v1.2.3", "clis": "gemini", "clis-key": "gemini-" + pins["GEMINI_VERSION"]}},
		{name: "the version input wins", inputs: []string{"WALKIE_VERSION_INPUT=2.0.1", "WALKIE_ACTION_REF=v1.2.3"},
			want: map[string]string{"version": "v2.0.1", "bin-dir": "/opt/hostedtoolcache/walkie/v2.0.1/" + runtime.GOOS + "-" + unameM(t)}},
		{name: "agents of a config install no CLI", inputs: []string{"WALKIE_AGENTS=alice,claude,claude"},
			want: map[string]string{"clis": "claude"}},
		{name: "CLIs named outright", inputs: []string{"WALKIE_AGENTS=alice", "WALKIE_INSTALL_CLIS=codex, gemini"},
			want: map[string]string{"clis": "codex gemini"}},
		{name: "no CLIs", inputs: []string{"WALKIE_AGENTS=claude", "WALKIE_INSTALL_CLIS=none"}, want: map[string]string{"clis": "", "clis-key": ""}},
		{name: "the config input", inputs: []string{"WALKIE_CONFIG=ci/walkie.yaml"}, want: map[string]string{"config": "ci/walkie.yaml"}},
		{name: "latest", inputs: []string{"WALKIE_VERSION_INPUT=latest"}, refused: "latest is not allowed"},
		{name: "a version that is not one", inputs: []string{"WALKIE_VERSION_INPUT=v1; rm -rf /"}, refused: "give a release tag"},
		{name: "a CLI that is no preset", inputs: []string{"WALKIE_INSTALL_CLIS=claude,aider"}, refused: "install-clis"},
		{name: "not a boolean", inputs: []string{"WALKIE_BUILD_FROM_SOURCE=yes"}, refused: "build-from-source \"yes\": true or false"},
		{name: "Bedrock and Vertex", inputs: []string{"WALKIE_USE_BEDROCK=true", "WALKIE_USE_VERTEX=true"}, refused: "both true"},
		{name: "a model name that is YAML", inputs: []string{"WALKIE_CLAUDE_MODEL=x\"\n  command: [sh]"}, refused: "a model name is"},
		{name: "a config and a model", inputs: []string{"WALKIE_CONFIG=w.yaml", "WALKIE_CODEX_MODEL=gpt-5.5"}, refused: "set model: and env_allow: under agents in w.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, msg := prepare(t, c.inputs...)
			if c.refused != "" {
				if got != nil || !strings.Contains(msg, "::error title=walkie action::") || !strings.Contains(msg, c.refused) {
					t.Errorf("outputs %v, message %q; want it refused saying %q", got, msg, c.refused)
				}
				return
			}
			if got == nil {
				t.Fatalf("refused: %s", msg)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s=%q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func unameM(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("uname", "-m").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// The model and cloud inputs become a config walkie reads: each preset
// runs the model given, and claude on Bedrock or Vertex gets the cloud's
// variables through its environment allow-list.
func TestActionPrepareConfig(t *testing.T) {
	for _, c := range []struct {
		name   string
		inputs []string
		models map[string]string
		allow  []string
	}{
		{name: "models", inputs: []string{"WALKIE_CLAUDE_MODEL=claude-opus-4-8", "WALKIE_CODEX_MODEL=gpt-5.5", "WALKIE_GEMINI_MODEL=gemini-3-pro"},
			models: map[string]string{"claude": "claude-opus-4-8", "codex": "gpt-5.5", "gemini": "gemini-3-pro"}},
		{name: "Bedrock", inputs: []string{"WALKIE_USE_BEDROCK=true", "WALKIE_CLAUDE_MODEL=us.anthropic.claude-opus-4-8-v1:0"},
			models: map[string]string{"claude": "us.anthropic.claude-opus-4-8-v1:0", "codex": "gpt-6.2-sol"},
			allow:  []string{"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}},
		{name: "Vertex", inputs: []string{"WALKIE_USE_VERTEX=true", "WALKIE_CLAUDE_MODEL=claude-opus-4-8@20261001"},
			models: map[string]string{"claude": "claude-opus-4-8@20261001"},
			allow:  []string{"ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION", "GOOGLE_APPLICATION_CREDENTIALS"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, msg := prepare(t, c.inputs...)
			if got == nil || got["config"] == "" {
				t.Fatalf("no config: %v %s", got, msg)
			}
			cfg, err := config.Parse(got["config"], readFile(t, got["config"]))
			if err != nil {
				t.Fatalf("walkie cannot read the config the action wrote: %v\n%s", err, readFile(t, got["config"]))
			}
			for name, model := range c.models {
				a, err := cfg.Agent(name)
				if err != nil || a.Model != model {
					t.Errorf("agent %s: %v, model %q, want %s", name, err, a.Model, model)
				}
			}
			claude, err := cfg.Agent("claude")
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range c.allow {
				if !slices.Contains(claude.EnvAllow, v) {
					t.Errorf("claude's env_allow %v has no %s", claude.EnvAllow, v)
				}
			}
		})
	}
}

// The pull-request input, against a stand-in for the REST API: the pull
// request becomes a payload walkie review reads as its event (the number,
// the base, the repository), and one from a fork is refused.
func TestActionPullRequest(t *testing.T) {
	prs := map[string]string{
		"/repos/acme/shop/pulls/7": `{"number": 7, "title": "Cache design", "body": "Please review.", "html_url": "https://github.com/acme/shop/pull/7",
			"base": {"ref": "main", "sha": "cb3d2c362ef42b9084cea27643664ae451d9639a", "repo": {"full_name": "acme/shop"}},
			"head": {"sha": "9247d4a0afa57e6469d355376897e209e6293226", "repo": {"full_name": "acme/shop"}}}`,
		"/repos/acme/shop/pulls/8": `{"number": 8, "base": {"ref": "main", "sha": "cb3d", "repo": {"full_name": "acme/shop"}},
			"head": {"sha": "9247", "repo": {"full_name": "mallory/shop"}}}`,
		"/repos/acme/shop/pulls/9": `{"number": 9, "base": {"ref": "main", "sha": "cb3d", "repo": {"full_name": "acme/shop"}},
			"head": {"sha": "9247", "repo": null}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ghs_test" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		body, ok := prs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	for _, c := range []struct {
		n, refused string
	}{
		{n: "7"},
		{n: "8", refused: "comes from mallory/shop"},
		{n: "9", refused: "comes from a deleted fork"},
		{n: "10", refused: "cannot read pull request #10"},
		{n: "7; id", refused: "the number of a pull request"},
	} {
		t.Run(c.n, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("../../scripts/github/pull-request.sh")
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GITHUB_OUTPUT=" + filepath.Join(dir, "out"), "RUNNER_TEMP=" + dir,
				"GITHUB_API_URL=" + srv.URL, "GITHUB_REPOSITORY=acme/shop", "GITHUB_TOKEN=ghs_test", "WALKIE_PULL_REQUEST=" + c.n}
			out, err := cmd.CombinedOutput()
			if c.refused != "" {
				if err == nil || !strings.Contains(string(out), c.refused) {
					t.Errorf("pull-request.sh: %v, want it refused saying %q\n%s", err, c.refused, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("pull-request.sh: %v\n%s", err, out)
			}
			path, ok := strings.CutPrefix(strings.TrimSpace(string(readFile(t, filepath.Join(dir, "out")))), "event-path=")
			if !ok {
				t.Fatalf("no event-path output")
			}
			ev, err := review.ReadEvent(path, "issue_comment")
			if err != nil {
				t.Fatal(err)
			}
			pr := ev.PullRequest
			if pr == nil || pr.Number != 7 || pr.BaseSHA != "cb3d2c362ef42b9084cea27643664ae451d9639a" || pr.Repo != "acme/shop" || pr.Fork || pr.Title != "Cache design" {
				t.Errorf("walkie reads the event as %+v", pr)
			}
		})
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
