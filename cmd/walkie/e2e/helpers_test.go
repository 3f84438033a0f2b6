package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// markerVar is set, with a value unique to the test, in the environment of
// every walkie a test starts; the test config passes it on to the agents
// (env_allow) and their children inherit it, so /proc shows every process
// a run started, wherever it was reparented.
const markerVar = "WALKIE_TEST_RUN"

// debate is one test's debate: a directory holding the walkie file, the
// config and the fake agents' scripts.
type debate struct {
	t      *testing.T
	dir    string
	name   string // the walkie file, relative to dir
	id     string
	marker string
	env    []string // more environment for every walkie it starts
}

// setup describes a debate. Defaults and agent settings are YAML values
// keyed by config key; they are laid over fast defaults suited to tests.
type setup struct {
	participants []string
	maxRounds    int
	defaults     map[string]string
	agents       map[string]map[string]string // per participant, agent keys (command replaces the fake agent)
	scripts      map[string]string            // per participant, the fake agent's script
	top          string                       // more top-level YAML
	people       []string                     // participants with no agent: persons who post
}

var runs atomic.Int64

// newDebate writes the config and scripts and runs `walkie init`.
func newDebate(t *testing.T, s setup) *debate {
	t.Helper()
	readSources(t)
	if s.maxRounds == 0 {
		s.maxRounds = 3
	}
	d := &debate{t: t, dir: t.TempDir(), name: "d.walkie.md", id: "d",
		marker: fmt.Sprintf("%d-%d-%s", os.Getpid(), runs.Add(1), t.Name())}
	d.configure(s)
	d.write("briefing.md", "Should the test pass? Argue it out, one turn each.\n\n## What a sign-off means\nYou agree it passes.\n")
	d.mustRun(0, "init", d.name, "--agents", strings.Join(s.participants, ","), "--max-rounds", strconv.Itoa(s.maxRounds), "--briefing", "briefing.md")
	t.Cleanup(d.killLeftovers)
	return d
}

// configure writes walkie.yaml and the scripts for s.
func (d *debate) configure(s setup) {
	d.t.Helper()
	defaults := map[string]string{
		"timeout":    "20s",
		"stall":      "10s",
		"grace":      "100ms",
		"kill_grace": "500ms",
		"retries":    "1",
		"home":       "inherit",
		"env_allow":  "[" + markerVar + "]",
		// The fake agents keep their counters (and pid files) in a folder
		// of their own, which their sandboxes open.
		"sandbox_write": fmt.Sprintf("[%q]", d.path("fake")),
	}
	maps.Copy(defaults, s.defaults)
	if err := os.MkdirAll(d.path("fake"), 0o755); err != nil {
		d.t.Fatal(err)
	}
	var cfg strings.Builder
	cfg.WriteString(s.top + "\ndefaults:\n")
	for _, k := range slices.Sorted(maps.Keys(defaults)) {
		fmt.Fprintf(&cfg, "  %s: %s\n", k, defaults[k])
	}
	cfg.WriteString("agents:\n")
	for _, p := range s.participants {
		if slices.Contains(s.people, p) {
			continue
		}
		keys := map[string]string{
			"command": fmt.Sprintf(`[fakeagent, --file, "{file}", --agent, "{agent}", --script, %s.yaml, --state, fake/%s.state]`, p, p),
			"usage":   "claude-json",
		}
		maps.Copy(keys, s.agents[p])
		fmt.Fprintf(&cfg, "  %s:\n", p)
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			fmt.Fprintf(&cfg, "    %s: %s\n", k, keys[k])
		}
		d.write(p+".yaml", s.scripts[p]+"\n")
	}
	d.write("walkie.yaml", cfg.String())
}

func (d *debate) path(name string) string { return filepath.Join(d.dir, name) }

func (d *debate) stateDir() string {
	return filepath.Join(d.dir, filepath.Dir(d.name), ".walkie", d.id)
}

func (d *debate) write(name, content string) {
	d.t.Helper()
	if err := os.WriteFile(d.path(name), []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

func (d *debate) read(name string) []byte {
	d.t.Helper()
	b, err := os.ReadFile(d.path(name))
	if err != nil {
		d.t.Fatal(err)
	}
	return b
}

// result is a finished walkie command.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// proc is a walkie command running in the background.
type proc struct {
	d              *debate
	cmd            *exec.Cmd
	mu             sync.Mutex // guards stdout and stderr while it runs
	stdout, stderr bytes.Buffer
	started        time.Time
	done           chan struct{}
	res            result
}

// start runs walkie in the debate's directory without waiting for it.
func (d *debate) start(args ...string) *proc {
	d.t.Helper()
	p := &proc{d: d, done: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(bin, "walkie"), args...)
	p.cmd.Dir = d.dir
	p.cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), markerVar+"="+d.marker,
		// A race-enabled binary otherwise sleeps a second at exit.
		"GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"))
	p.cmd.Env = append(p.cmd.Env, d.env...)
	p.cmd.Stdout, p.cmd.Stderr = lockedWriter{&p.mu, &p.stdout}, lockedWriter{&p.mu, &p.stderr}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		p.res = result{code: p.cmd.ProcessState.ExitCode(), stdout: p.stdout.String(), stderr: p.stderr.String(), took: time.Since(p.started)}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.res.code = -1
			p.res.stderr += "\n(wait: " + err.Error() + ")"
		}
		close(p.done)
	}()
	return p
}

// wait waits for the command, failing the test if it runs past limit.
func (p *proc) wait(limit time.Duration) result {
	p.d.t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.d.t.Fatalf("walkie %s still running after %s\nstderr:\n%s", strings.Join(p.cmd.Args[1:], " "), limit, p.res.stderr)
	}
	if strings.Contains(p.res.stderr, "DATA RACE") {
		p.d.t.Errorf("walkie %s: the race detector fired:\n%s", strings.Join(p.cmd.Args[1:], " "), p.res.stderr)
	}
	return p.res
}

// stderrSoFar is what the running command has written to stderr so far.
func (p *proc) stderrSoFar() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.stderr.Bytes())
}

func (p *proc) signal(sig syscall.Signal) {
	p.d.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.d.t.Fatal(err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// run runs walkie to the end.
func (d *debate) run(args ...string) result {
	d.t.Helper()
	return d.start(args...).wait(60 * time.Second)
}

// mustRun runs walkie and fails the test unless it exits with code.
func (d *debate) mustRun(code int, args ...string) result {
	d.t.Helper()
	r := d.run(args...)
	if r.code != code {
		d.t.Fatalf("walkie %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// auto runs `walkie auto` on the debate and checks its exit code.
func (d *debate) auto(code int, args ...string) result {
	d.t.Helper()
	return d.mustRun(code, append([]string{"auto", d.name, "--approve"}, args...)...)
}

// sandboxRecord is how an attempt's sandbox was applied and what its
// output reported refused.
type sandboxRecord struct {
	Kind    string   `json:"kind"`
	ABI     int      `json:"abi"`
	Missing []string `json:"missing"`
	Left    []string `json:"left_out"`
	Refused []string `json:"refused"`
}

// turnRecord is one line of turns.jsonl, decoded by its documented field
// names (not the controller's Go type), so a renamed field fails here.
type turnRecord struct {
	Seq        int    `json:"seq"`
	Turn       int    `json:"turn"`
	Round      int    `json:"round"`
	Agent      string `json:"agent"`
	Role       string `json:"role"`
	Attempt    int    `json:"attempt"`
	Started    string `json:"started"`
	Ended      string `json:"ended"`
	DurationMS int64  `json:"duration_ms"`
	ExitCode   *int   `json:"exit_code"`
	Signal     string `json:"signal"`
	Outcome    string `json:"outcome"`
	Detail     string `json:"detail"`
	EndedBy    string `json:"ended_by"`
	Bytes      int64  `json:"output_bytes"`
	Signed     bool   `json:"signed"`
	Kept       string `json:"kept"`
	Branch     string `json:"branch"`
	Usage      *usage `json:"usage"`
	Transcript *struct {
		Raw  string `json:"raw"`
		Text string `json:"text"`
	} `json:"transcript"`
	Sandbox *sandboxRecord `json:"sandbox"`
	// Provenance.
	Argv         []string `json:"argv"`
	PromptSHA256 string   `json:"prompt_sha256"`
	CLIVersion   string   `json:"cli_version"`
	Model        string   `json:"model"`
	Effort       string   `json:"effort"`
}

type usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	CostSource   string  `json:"cost_source"`
	Partial      bool    `json:"partial"`
}

func (r turnRecord) String() string {
	code := "-"
	if r.ExitCode != nil {
		code = strconv.Itoa(*r.ExitCode)
	}
	return fmt.Sprintf("turn %d %s attempt %d: %s (%s) exit=%s signal=%s ended_by=%s", r.Turn, r.Agent, r.Attempt, r.Outcome, r.Detail, code, r.Signal, r.EndedBy)
}

// turns reads turns.jsonl; every line must be whole.
func (d *debate) turns() []turnRecord {
	d.t.Helper()
	f, err := os.Open(filepath.Join(d.stateDir(), "turns.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	var out []turnRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r turnRecord
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			d.t.Fatalf("turns.jsonl: %v in %s", err, sc.Text())
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		d.t.Fatal(err)
	}
	return out
}

// outcomes lists the outcome of every attempt, in order.
func outcomes(recs []turnRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Outcome)
	}
	return out
}

// wantOutcomes fails the test unless the attempts' outcomes are want.
func (d *debate) wantOutcomes(recs []turnRecord, want ...string) {
	d.t.Helper()
	if got := outcomes(recs); !slices.Equal(got, want) {
		d.t.Fatalf("outcomes %v, want %v\n%s", got, want, dump(recs))
	}
}

func dump(recs []turnRecord) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString("  " + r.String() + "\n")
	}
	return b.String()
}

func exitCode(r turnRecord) int {
	if r.ExitCode == nil {
		return -1
	}
	return *r.ExitCode
}

// state reads the debate's control state.
func (d *debate) state() *walkie.State {
	d.t.Helper()
	st, err := walkie.LoadState(d.stateDir())
	if err != nil {
		d.t.Fatal(err)
	}
	return st
}

// verify runs `walkie verify` and checks the record has turns turns.
func (d *debate) verify(turns int) {
	d.t.Helper()
	d.mustRun(0, "verify", d.name)
	doc, err := walkie.Load(d.path(d.name))
	if err != nil {
		d.t.Fatal(err)
	}
	if got := doc.Progress().Turns; got != turns {
		d.t.Fatalf("the record holds %d turns, want %d", got, turns)
	}
}

// status returns the debate's status as `walkie status --json` reports it.
func (d *debate) status() string {
	d.t.Helper()
	r := d.mustRun(0, "status", d.name, "--json")
	var s struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		d.t.Fatalf("walkie status --json: %v\n%s", err, r.stdout)
	}
	return s.Status
}

// waitRunning waits until the controller p has started an agent's
// session for turn and recorded its pid (walkie.SessionNote), and returns
// the pid.
func (d *debate) waitRunning(p *proc, turn int) int {
	d.t.Helper()
	pid := 0
	sessiontest.WaitFor(d.t, 20*time.Second, fmt.Sprintf("running turn %d", turn), func() bool {
		select {
		case <-p.done:
			d.t.Fatalf("walkie exited %d before turn %d ran:\n%s", p.res.code, turn, p.res.stderr)
		default:
		}
		st, err := walkie.LoadState(d.stateDir())
		if err != nil || st.Running == nil || st.Running.Turn != turn {
			return false
		}
		if n := walkie.LoadSessionNote(d.stateDir(), st.Running.Session); n != nil {
			pid = n.Pid
		}
		return pid > 0
	})
	return pid
}

// waitInvoked waits until agent has been started n times: the fake agent
// counts its invocations in AGENT.state as soon as it has read its script.
func (d *debate) waitInvoked(agent string, n int) {
	d.t.Helper()
	sessiontest.WaitFor(d.t, 20*time.Second, fmt.Sprintf("%s invoked %d times", agent, n), func() bool {
		b, err := os.ReadFile(d.path(agent + ".state"))
		k, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && k >= n
	})
}

// processes lists the live processes carrying this test's marker.
func (d *debate) processes() []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	want := []byte(markerVar + "=" + d.marker + "\x00")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		// A zombie's environ reads empty: it holds nothing and runs nothing.
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// noProcessesLeft fails the test if any process of the run is alive.
// Processes killed a moment ago may still be exiting, so it waits briefly.
func (d *debate) noProcessesLeft() {
	d.t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		pids := d.processes()
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("processes of the run are still alive: %s", describe(pids))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		parts = append(parts, fmt.Sprintf("%d (%s)", pid, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
	}
	return strings.Join(parts, ", ")
}

// killLeftovers ends whatever a failed test left running, so it cannot
// disturb the tests after it.
func (d *debate) killLeftovers() {
	for _, pid := range d.processes() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// ignores reports whether pid ignores sig (SigIgn in /proc/PID/status).
func ignores(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}
