//go:build linux

package realcli

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
)

// markerVar carries a value unique to each test into the environment of
// the walkie it starts; the config passes it on to the agents (env_allow)
// and every descendant inherits it, so /proc shows whatever a run left.
const markerVar = "WALKIE_TEST_RUN"

var runs atomic.Int64

// slots bounds the real CLI sessions running at once: each costs a node
// start-up or two, and on a loaded 2-core machine more at once only makes
// every one of them slower.
var slots = make(chan struct{}, 3)

// fixture is one test's debate: a directory with the walkie file and its
// config, a fake model server, and walkie's own HOME and TMPDIR.
type fixture struct {
	t        *testing.T
	dir      string
	file     string // dir/d.walkie.md, or setup.file
	stateDir string // the debate's state directory
	srv      *modelserver.Server
	marker   string
	home     string // walkie's HOME
	tmp      string // walkie's TMPDIR: the sessions' private HOMEs and TMPDIRs live under it
	extra    []string
}

// setup is what a test varies.
type setup struct {
	participants []string
	maxRounds    int
	defaults     map[string]string // defaults: keys over the fast ones below
	top          string            // extra top-level YAML
	// agents returns a participant's entry under agents: (YAML indented
	// four spaces) given the server's URL; nil, or "" for a participant,
	// is its preset pointed at the server with a key.
	agents func(url string) map[string]string
	// people are participants with no agent: persons who post.
	people []string
	// env is more of walkie's environment ("K=V").
	env []string
	// file and id name the walkie file (relative to the fixture's
	// directory) and its debate, made by create instead of walkie init
	// (a review thread); empty: d.walkie.md, made by init.
	file, id string
	create   func(f *fixture)
}

// newFixture makes the debate; script is called with its file's path
// before the model server starts.
func newFixture(t *testing.T, script func(file string) modelserver.Script, s setup) *fixture {
	t.Helper()
	need(t)
	dir := t.TempDir()
	if os.Getenv("REALCLI_KEEP") != "" { // for a look at the transcripts afterwards
		dir, _ = os.MkdirTemp("", "realcli-")
	}
	f := &fixture{t: t, dir: dir, home: t.TempDir(), tmp: t.TempDir(), extra: s.env,
		marker: fmt.Sprintf("%d-%d-%s", os.Getpid(), runs.Add(1), t.Name())}
	f.file = filepath.Join(f.dir, cmp.Or(s.file, "d.walkie.md"))
	f.stateDir = filepath.Join(filepath.Dir(f.file), ".walkie", cmp.Or(s.id, "d"))
	f.srv = modelserver.Start(t, script(f.file))
	t.Cleanup(f.noneLeft)
	if os.Getenv("REALCLI_KEEP") != "" {
		t.Logf("kept: %s", f.dir)
	}
	if s.maxRounds == 0 {
		s.maxRounds = 3
	}
	var cfg strings.Builder
	defaults := map[string]string{"timeout": "3m", "stall": "90s", "grace": "500ms", "kill_grace": "2s", "retries": "0",
		"env_allow": "[" + markerVar + "]"}
	maps.Copy(defaults, s.defaults)
	fmt.Fprintf(&cfg, "%s\ndefaults:\n", s.top)
	for _, k := range slices.Sorted(maps.Keys(defaults)) {
		fmt.Fprintf(&cfg, "  %s: %s\n", k, defaults[k])
	}
	cfg.WriteString("agents:\n")
	var entries map[string]string
	if s.agents != nil {
		entries = s.agents(f.srv.URL)
	}
	for _, p := range s.participants {
		if slices.Contains(s.people, p) {
			continue
		}
		e := entries[p]
		if e == "" {
			e = agentFor(p, f.srv.URL, true)
		}
		fmt.Fprintf(&cfg, "  %s:\n%s", p, e)
	}
	f.write("walkie.yaml", cfg.String())
	if s.create != nil {
		s.create(f)
		return f
	}
	f.write("brief.md", "Should the service's API return errors as RFC 9457 problem details?\n")
	f.mustRun(0, "init", "d.walkie.md", "--agents", strings.Join(s.participants, ","), "--max-rounds", strconv.Itoa(s.maxRounds), "--briefing", "brief.md")
	return f
}

func (f *fixture) read(name string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func (f *fixture) write(name, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// The agents' entries in walkie.yaml: each preset as it is, pointed at url
// the way a user would point it at a gateway, with or without its key.

func claudeAgent(url string, key bool) string {
	s := fmt.Sprintf("    env:\n      ANTHROPIC_BASE_URL: %q\n", url)
	if key {
		s += fmt.Sprintf("      ANTHROPIC_API_KEY: %q\n", modelserver.FakeAPIKey)
	}
	return s
}

// codexAgent defines a model provider in the private HOME's
// ~/.codex/config.toml: codex takes no base URL for its built-in one.
func codexAgent(url string, key bool) string {
	s := "    home_files:\n      .codex/config.toml: |\n" +
		"        model_provider = \"fake\"\n" +
		"        [model_providers.fake]\n" +
		"        name = \"fakemodel\"\n" +
		fmt.Sprintf("        base_url = %q\n", url+"/v1") +
		"        wire_api = \"responses\"\n" +
		"        env_key = \"FAKE_API_KEY\"\n" +
		"        request_max_retries = 1\n" +
		"        stream_max_retries = 1\n"
	if key {
		s += fmt.Sprintf("    env:\n      FAKE_API_KEY: %q\n", modelserver.FakeAPIKey)
	}
	return s
}

func geminiAgent(url string, key bool) string {
	s := fmt.Sprintf("    env:\n      GOOGLE_GEMINI_BASE_URL: %q\n", url)
	if key {
		s += fmt.Sprintf("      GEMINI_API_KEY: %q\n", modelserver.FakeAPIKey)
	}
	return s
}

func agentFor(cli, url string, key bool) string {
	switch cli {
	case "claude":
		return claudeAgent(url, key)
	case "codex":
		return codexAgent(url, key)
	}
	return geminiAgent(url, key)
}

// result is a finished walkie command.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// env is walkie's whole environment: nothing of the test's own (no API
// key of the machine running it can leak into an agent), the CLIs on PATH.
func (f *fixture) env() []string {
	return append([]string{
		"PATH=" + clis + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + f.home, "TMPDIR=" + f.tmp, "LANG=C.UTF-8",
		markerVar + "=" + f.marker,
		// A race-enabled binary otherwise sleeps a second at exit.
		"GORACE=atexit_sleep_ms=0",
	}, f.extra...)
}

// start runs walkie in the debate's directory; wait waits for it.
func (f *fixture) start(args ...string) (cmd *exec.Cmd, wait func() result) {
	f.t.Helper()
	cmd, _, wait = f.startLive(args...)
	return cmd, wait
}

// startLive is start, with what walkie has written to stderr so far.
func (f *fixture) startLive(args ...string) (cmd *exec.Cmd, stderrSoFar func() string, wait func() result) {
	f.t.Helper()
	var stdout, stderr bytes.Buffer
	errW := &lockedBuffer{b: &stderr}
	stderrSoFar = errW.String
	cmd = exec.Command(bin, args...)
	cmd.Dir, cmd.Env = f.dir, f.env()
	cmd.Stdout, cmd.Stderr = &lockedBuffer{b: &stdout}, errW
	started := time.Now()
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	done := make(chan struct{})
	var res result
	go func() {
		err := cmd.Wait()
		res = result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String(), took: time.Since(started)}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			res.code = -1
		}
		close(done)
	}()
	wait = func() result {
		select {
		case <-done:
		case <-time.After(6 * time.Minute):
			_ = cmd.Process.Kill()
			<-done
			f.t.Fatalf("walkie %s still running after 6m\nstderr:\n%s", strings.Join(args, " "), res.stderr)
		}
		if strings.Contains(res.stderr, "DATA RACE") {
			f.t.Errorf("walkie %s: the race detector fired:\n%s", strings.Join(args, " "), res.stderr)
		}
		return res
	}
	return cmd, stderrSoFar, wait
}

type lockedBuffer struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// run runs a walkie command to its end.
func (f *fixture) run(args ...string) result {
	f.t.Helper()
	_, wait := f.start(args...)
	return wait()
}

func (f *fixture) mustRun(code int, args ...string) result {
	f.t.Helper()
	r := f.run(args...)
	if r.code != code {
		f.t.Fatalf("walkie %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// slot waits for a free slot and returns its release, which the test's
// end calls too, should the test stop first.
func (f *fixture) slot() (release func()) {
	slots <- struct{}{}
	var once sync.Once
	release = func() { once.Do(func() { <-slots }) }
	f.t.Cleanup(release)
	return release
}

// session runs a walkie command that starts real CLI sessions, holding a
// slot while it runs, then checks that no process of it is left.
func (f *fixture) session(code int, args ...string) result {
	f.t.Helper()
	release := f.slot()
	r := f.run(append(args, "--config", "walkie.yaml")...)
	release()
	f.noneLeft()
	if r.code != code {
		f.t.Fatalf("walkie %s: exit %d, want %d\n%s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, dump(f.turns()), r.stdout, tail(r.stderr, 40))
	}
	return r
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

// noneLeft fails the test if any process carrying the test's marker is
// still alive, and kills it. Every real CLI session must be gone with its
// whole process tree when walkie exits.
func (f *fixture) noneLeft() {
	f.t.Helper()
	// The kernel may still be tearing a killed group down: give it a moment.
	deadline := time.Now().Add(3 * time.Second)
	for {
		pids := marked(f.marker)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var desc []string
			for _, pid := range pids {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				desc = append(desc, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			f.t.Errorf("processes left behind:\n  %s", strings.Join(desc, "\n  "))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// marked lists the live processes whose environment holds marker.
func marked(marker string) []int {
	want := []byte(markerVar + "=" + marker + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			// A zombie waits for its parent, which is gone or about to be.
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// privateDirsGone fails the test if a session's private HOME or TMPDIR,
// or anything a CLI wrote into its TMPDIR, is left in walkie's TMPDIR.
func (f *fixture) privateDirsGone() {
	f.t.Helper()
	ents, err := os.ReadDir(f.tmp)
	if err != nil {
		f.t.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if len(left) > 0 {
		f.t.Errorf("left in walkie's TMPDIR: %v", left)
	}
}

// turnRecord is one line of turns.jsonl, by its documented field names.
type turnRecord struct {
	Turn       int    `json:"turn"`
	Agent      string `json:"agent"`
	Attempt    int    `json:"attempt"`
	DurationMS int64  `json:"duration_ms"`
	ExitCode   *int   `json:"exit_code"`
	Signal     string `json:"signal"`
	Outcome    string `json:"outcome"`
	Detail     string `json:"detail"`
	EndedBy    string `json:"ended_by"`
	Signed     bool   `json:"signed"`
	Usage      *struct {
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		CostUSD      float64 `json:"cost_usd"`
		CostSource   string  `json:"cost_source"`
	} `json:"usage"`
	Transcript struct {
		Text string `json:"text"`
	} `json:"transcript"`
	Argv         []string `json:"argv"`
	PromptSHA256 string   `json:"prompt_sha256"`
	CLIVersion   string   `json:"cli_version"`
	Model        string   `json:"model"`
	Effort       string   `json:"effort"`
	KeysProxied  bool     `json:"keys_proxied"`
}

func (r turnRecord) String() string {
	code := "-"
	if r.ExitCode != nil {
		code = strconv.Itoa(*r.ExitCode)
	}
	u := ""
	if r.Usage != nil {
		u = fmt.Sprintf(" usage %d in, %d out, $%.6f %s", r.Usage.InputTokens, r.Usage.OutputTokens, r.Usage.CostUSD, r.Usage.CostSource)
	}
	return fmt.Sprintf("turn %d %s attempt %d: %s (%s) exit=%s signal=%s ended_by=%s %dms%s",
		r.Turn, r.Agent, r.Attempt, r.Outcome, r.Detail, code, r.Signal, r.EndedBy, r.DurationMS, u)
}

func (f *fixture) turns() []turnRecord {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.stateDir, "turns.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	var out []turnRecord
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r turnRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			f.t.Fatalf("turns.jsonl: %v in %s", err, sc.Text())
		}
		out = append(out, r)
	}
	return out
}

// state is the debate's state.json.
func (f *fixture) state() string {
	b, _ := os.ReadFile(filepath.Join(f.stateDir, "state.json"))
	return string(b)
}

// transcript is the plain text of an attempt's session.
func (f *fixture) transcript(r turnRecord) string {
	b, _ := os.ReadFile(filepath.Join(f.stateDir, r.Transcript.Text))
	return string(b)
}

func dump(recs []turnRecord) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString("  " + r.String() + "\n")
	}
	return b.String()
}

func (f *fixture) wantOutcomes(recs []turnRecord, want ...string) {
	f.t.Helper()
	var got []string
	for _, r := range recs {
		got = append(got, r.Outcome)
	}
	if !slices.Equal(got, want) {
		var texts strings.Builder
		for _, r := range recs {
			fmt.Fprintf(&texts, "--- transcript of turn %d attempt %d:\n%s\n", r.Turn, r.Attempt, tail(f.transcript(r), 25))
		}
		f.t.Fatalf("outcomes %v, want %v\n%s%s", got, want, dump(recs), texts.String())
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9+1e-6*math.Abs(b) }

// summary is `walkie auto --json`'s output.
type summary struct {
	Status  string  `json:"status"`
	Reason  string  `json:"reason"`
	Turns   int     `json:"turns"`
	CostUSD float64 `json:"cost_usd"`
}

func parseSummary(t *testing.T, r result) summary {
	t.Helper()
	var s summary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("walkie's JSON summary: %v\n%s", err, r.stdout)
	}
	return s
}

// debater is the fake model's side of a debate: it answers each CLI's
// first model call of a session with the tool call that appends the turn
// its prompt asks for, and the call after the tool ran with a last word.
type debater struct {
	file         string
	participants []string
	// text returns the turn's body and whether it signs off.
	text func(turn int, agent string) (string, bool)
}

// script is the debater's side of the fake model, for newFixture.
func (d *debater) script(file string) modelserver.Script {
	d.file = file
	return modelserver.Script{Func: d.reply}
}

// fixed is a script that does not need the file.
func fixed(s modelserver.Script) func(string) modelserver.Script {
	return func(string) modelserver.Script { return s }
}

// routing is what gemini's router model answers when gemini runs without
// -m: a JSON verdict on the turn's complexity (a simple one picks flash).
const routing = `{"complexity_reasoning":"a short written turn","complexity_score":1}`

func (d *debater) reply(r *modelserver.Request) (modelserver.Reply, bool) {
	if isRouting(r) {
		return modelserver.Text(routing), true
	}
	if toolResults(r) > 0 {
		return modelserver.Text("I appended my turn."), true
	}
	for n := 1; n <= 40; n++ {
		for _, agent := range d.participants {
			if !r.HasText(fmt.Sprintf("## Turn %d · %s", n, agent)) {
				continue
			}
			body, signed := d.text(n, agent)
			turn := fmt.Sprintf("\n## Turn %d · %s\n\n%s\n", n, agent, body)
			if signed {
				turn += "\nSigned-off-by: " + agent + "\n"
			}
			if r.Vendor == modelserver.Gemini {
				// gemini's preset offers its edit tools, not the shell: a
				// replace of the whole file with the file plus the turn.
				cur, err := os.ReadFile(d.file)
				if err != nil {
					return modelserver.Text("cannot read the file: " + err.Error()), true
				}
				return modelserver.Tool("replace", map[string]any{"file_path": d.file, "instruction": "Append my turn at the very end of the file.",
					"old_string": string(cur), "new_string": string(cur) + turn}), true
			}
			// printf's format carries the turn; bodies hold no ', % or \.
			return modelserver.Shell("printf '" + strings.ReplaceAll(turn, "\n", `\n`) + "' >> '" + d.file + "'"), true
		}
	}
	return modelserver.Text("The prompt names no turn."), true
}

// isRouting reports gemini's routing call: a plain generateContent
// (the turn itself streams).
func isRouting(r *modelserver.Request) bool {
	return r.Vendor == modelserver.Gemini && strings.HasSuffix(r.Path, ":generateContent")
}

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

// proposal: the first speaker proposes, everyone else agrees and signs,
// and the first speaker signs last.
func proposal(turn int, agent string) (string, bool) {
	if turn == 1 {
		return "Proposal: return every error as RFC 9457 problem details, with a stable type URI per error.", false
	}
	return fmt.Sprintf("%s agrees: problem details as proposed in turn 1.", agent), true
}

// waitRequests waits until the server has seen n model calls.
func (f *fixture) waitRequests(n int, limit time.Duration) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := f.srv.WaitRequests(ctx, n); err != nil {
		f.t.Fatalf("the model got %d calls, want %d: %v", len(f.srv.Requests()), n, err)
	}
}
