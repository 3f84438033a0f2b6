//go:build linux

package realcli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/walkie"
)

// slots bounds the real CLI sessions running at once: each costs a node
// start-up or two, and on a loaded 2-core machine more at once only makes
// every one of them slower.
var slots = make(chan struct{}, 3)

// fixture is one test's debate: a directory (the runner's) with the
// walkie file and its config, a fake model server, and walkie's own HOME
// and TMPDIR.
type fixture struct {
	blackbox.Runner        // walkie in the debate's directory
	file            string // Dir/d.walkie.md, or setup.file
	stateDir        string // the debate's state directory
	srv             *modelserver.Server
	marker          blackbox.Marker
	home            string // walkie's HOME
	tmp             string // walkie's TMPDIR: the sessions' private HOMEs and TMPDIRs live under it
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
func newFixture(t testing.TB, script func(file string) modelserver.Script, s setup) *fixture {
	t.Helper()
	need(t)
	dir := t.TempDir()
	if os.Getenv("REALCLI_KEEP") != "" { // for a look at the transcripts afterwards
		dir, _ = os.MkdirTemp("", "realcli-")
	}
	f := &fixture{home: t.TempDir(), tmp: t.TempDir(), marker: blackbox.NewMarker(t)}
	f.Runner = blackbox.Runner{T: t, Bin: bin, Dir: dir, Env: f.env(s.env...), Limit: 6 * time.Minute}
	f.file = filepath.Join(f.Dir, cmp.Or(s.file, "d.walkie.md"))
	f.stateDir = filepath.Join(filepath.Dir(f.file), ".walkie", cmp.Or(s.id, "d"))
	f.srv = modelserver.Start(t, script(f.file))
	t.Cleanup(f.noneLeft)
	if os.Getenv("REALCLI_KEEP") != "" {
		t.Logf("kept: %s", f.Dir)
	}
	if s.maxRounds == 0 {
		s.maxRounds = 3
	}
	cfg := blackbox.Config{Top: s.top, Defaults: cliDefaults()}
	maps.Copy(cfg.Defaults, s.defaults)
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
		cfg.Agents = append(cfg.Agents, blackbox.Agent{Name: p, More: e})
	}
	cfg.Write(t, filepath.Join(f.Dir, "walkie.yaml"))
	if s.create != nil {
		s.create(f)
		return f
	}
	f.write("brief.md", "Should the service's API return errors as RFC 9457 problem details?\n")
	args := []string{"init", "d.walkie.md", "--agents", strings.Join(s.participants, ","), "--max-rounds", strconv.Itoa(s.maxRounds), "--briefing", "brief.md"}
	if len(s.people) > 0 {
		args = append(args, "--people", strings.Join(s.people, ","))
	}
	f.MustRun(0, args...)
	return f
}

// cliDefaults are the defaults of a debate between real CLIs: limits a
// real CLI on a loaded machine keeps to, no retries (a failure class is
// seen at once), and the marker passed on.
func cliDefaults() map[string]string {
	return map[string]string{"timeout": "3m", "stall": "90s", "grace": "500ms", "kill_grace": "2s", "retries": "0",
		"env_allow": "[" + blackbox.MarkerVar + "]"}
}

func (f *fixture) read(name string) string {
	f.T.Helper()
	b, err := os.ReadFile(filepath.Join(f.Dir, name))
	if err != nil {
		f.T.Fatal(err)
	}
	return string(b)
}

func (f *fixture) write(name, content string) {
	f.T.Helper()
	if err := os.WriteFile(filepath.Join(f.Dir, name), []byte(content), 0o644); err != nil {
		f.T.Fatal(err)
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

// env is walkie's whole environment: nothing of the test's own (no API
// key of the machine running it can leak into an agent), the CLIs on PATH,
// and more.
func (f *fixture) env(more ...string) []string {
	return append(append(blackbox.Env(clis, f.marker), "HOME="+f.home, "TMPDIR="+f.tmp, "LANG=C.UTF-8"), more...)
}

// slot waits for a free slot and returns its release, which the test's
// end calls too, should the test stop first.
func (f *fixture) slot() (release func()) { return takeSlot(f.T) }

func takeSlot(t testing.TB) (release func()) {
	slots <- struct{}{}
	var once sync.Once
	release = func() { once.Do(func() { <-slots }) }
	t.Cleanup(release)
	return release
}

// session runs a walkie command that starts real CLI sessions, holding a
// slot while it runs, then checks that no process of it is left.
func (f *fixture) session(code int, args ...string) blackbox.Result {
	f.T.Helper()
	release := f.slot()
	r := f.Run(append(args, "--config", "walkie.yaml")...)
	release()
	f.noneLeft()
	if r.Code != code {
		f.T.Fatalf("walkie %s: exit %d, want %d\n%s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, code, blackbox.Dump(f.turns()), r.Stdout, blackbox.Tail(r.Stderr, 40))
	}
	return r
}

// noneLeft fails the test if any process carrying the test's marker is
// still alive, and kills it. Every real CLI session must be gone with its
// whole process tree when walkie exits; the kernel may still be tearing a
// killed group down, hence the moment's grace.
func (f *fixture) noneLeft() {
	f.T.Helper()
	f.marker.NoneLeft(f.T, 3*time.Second)
}

// privateDirsGone fails the test if a session's private HOME or TMPDIR,
// or anything a CLI wrote into its TMPDIR, is left in walkie's TMPDIR.
func (f *fixture) privateDirsGone() {
	f.T.Helper()
	ents, err := os.ReadDir(f.tmp)
	if err != nil {
		f.T.Fatal(err)
	}
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if len(left) > 0 {
		f.T.Errorf("left in walkie's TMPDIR: %v", left)
	}
}

// turns reads the attempts in the debate's log.
func (f *fixture) turns() []blackbox.Turn {
	f.T.Helper()
	return blackbox.ReadTurns(f.T, f.stateDir)
}

// state is the debate's state, as its log folds it.
func (f *fixture) state() string {
	st, err := walkie.LoadState(f.stateDir)
	if err != nil {
		return err.Error()
	}
	b, _ := json.Marshal(st)
	return string(b)
}

// transcript is the plain text of an attempt's session.
func (f *fixture) transcript(r blackbox.Turn) string {
	if r.Transcript == nil {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(f.stateDir, r.Transcript.Text))
	return string(b)
}

// wantOutcomes fails the test unless the attempts' outcomes are want.
func (f *fixture) wantOutcomes(recs []blackbox.Turn, want ...string) {
	f.T.Helper()
	blackbox.WantOutcomes(f.T, f.stateDir, recs, want...)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9+1e-6*math.Abs(b) }

// summary is `walkie auto --json`'s output.
type summary struct {
	Status  string  `json:"status"`
	Reason  string  `json:"reason"`
	Turns   int     `json:"turns"`
	CostUSD float64 `json:"cost_usd"`
}

func parseSummary(t *testing.T, r blackbox.Result) summary {
	t.Helper()
	var s summary
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		t.Fatalf("walkie's JSON summary: %v\n%s", err, r.Stdout)
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
	f.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := f.srv.WaitRequests(ctx, n); err != nil {
		f.T.Fatalf("the model got %d calls, want %d: %v", len(f.srv.Requests()), n, err)
	}
}
