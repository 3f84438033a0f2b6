//go:build linux

package modelserver

// Integration tests: the real claude, codex and gemini CLIs, installed by
// scripts/install-clis.sh into .cache/clis, run headless against the fake
// server. They pin down the flags walkie's presets use and what each CLI
// prints and returns in each failure class; docs/agents.md explains them.
//
// go test ./cmd/fakemodel/modelserver -run CLI -update rewrites the samples
// in cmd/fakemodel/testdata from fresh runs.

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the samples in cmd/fakemodel/testdata from the real CLIs")

// testdataDir holds the samples, beside the fakemodel command, for the
// usage and outcome parsers elsewhere in the tree to read.
const testdataDir = "../testdata"

// The prompt every run sends; tests check it reached the model.
const prompt = "walkie-test-prompt: append your line to turn.md"

// cliRun is one run of a real CLI.
type cliRun struct {
	bin  string
	args []string
	env  []string // added to a minimal base environment
	dir  string   // working directory; a fresh temp dir when empty
	home string   // HOME; a fresh temp dir when empty
	// limit bounds the run; on expiry the process group is ended and
	// result.killed is set. Hang tests expect that.
	limit time.Duration
	// cred runs the CLI as another user (root only); the run's directories
	// are handed to that user first.
	cred *syscall.Credential
}

type cliResult struct {
	stdout, stderr string
	code           int    // exit code; -1 when ended by a signal
	signal         string // the signal that ended it, if one did
	dur            time.Duration
	killed         bool // the test ended it at its limit
	dir, home      string
}

// baseEnv is what every CLI gets: enough to find node and write its files
// somewhere private, nothing of the user's (no keys, no config dirs).
func baseEnv(home, tmp, marker string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"LANG=C.UTF-8",
		// Marks every descendant, so leftovers can be found even when a CLI
		// moves a child into a new process group (gemini does, for its
		// shell tool).
		"WALKIE_FAKEMODEL_TEST=" + marker,
	}
}

func newMarker(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// run starts the CLI in its own process group with stdin=/dev/null (codex
// reads stdin whenever it is not a terminal), waits for it or its limit,
// ends the whole group, and checks nothing it started is left behind.
func (r cliRun) run(t *testing.T) cliResult {
	t.Helper()
	if r.dir == "" {
		r.dir = t.TempDir()
	}
	if r.home == "" {
		r.home = t.TempDir()
	}
	if r.limit == 0 {
		r.limit = 90 * time.Second
	}
	tmp := t.TempDir()
	marker := newMarker(t)
	outDir := t.TempDir()
	stdout, err := os.Create(filepath.Join(outDir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(outDir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()

	cmd := exec.Command(r.bin, r.args...)
	cmd.Dir = r.dir
	cmd.Env = append(baseEnv(r.home, tmp, marker), r.env...)
	// Files, not pipes: Wait then never waits on a grandchild that keeps
	// the output open.
	cmd.Stdin = nil // /dev/null
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: r.cred}
	if r.cred != nil {
		for _, d := range []string{r.dir, r.home, tmp} {
			giveTo(t, d, r.cred)
		}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", r.bin, err)
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	res := cliResult{dir: r.dir, home: r.home}
	timer := time.NewTimer(r.limit)
	defer timer.Stop()
	var werr error
	select {
	case werr = <-done:
	case <-timer.C:
		res.killed = true
		werr = endGroup(pgid, done)
	}
	res.dur = time.Since(start)
	// Always sweep the group: children that ignore the leader's exit.
	syscall.Kill(-pgid, syscall.SIGKILL) //nolint:errcheck // ESRCH when none are left.
	res.code = cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.signal = ws.Signal().String()
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		t.Fatalf("wait %s: %v", r.bin, werr)
	}
	checkNoLeftovers(t, marker)

	b, _ := os.ReadFile(stdout.Name())
	res.stdout = string(b)
	b, _ = os.ReadFile(stderr.Name())
	res.stderr = string(b)
	t.Logf("%s %s: exit %d (signal %q) after %v (ended by the test: %t)", filepath.Base(r.bin), strings.Join(r.args, " "), res.code, res.signal, res.dur.Round(time.Millisecond), res.killed)
	return res
}

// giveTo hands the tree at path to the user of cred, and lets everyone
// traverse its parent (t.TempDir makes parents 0700).
func giveTo(t *testing.T, path string, cred *syscall.Credential) {
	t.Helper()
	if err := os.Chmod(filepath.Dir(path), 0o711); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(path, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
	if err != nil {
		t.Fatalf("chown %s: %v", path, err)
	}
}

// endGroup sends SIGTERM to the group, then SIGKILL after a grace period,
// and returns the leader's Wait result.
func endGroup(pgid int, done <-chan error) error {
	syscall.Kill(-pgid, syscall.SIGTERM) //nolint:errcheck
	grace := time.NewTimer(3 * time.Second)
	defer grace.Stop()
	select {
	case err := <-done:
		return err
	case <-grace.C:
	}
	syscall.Kill(-pgid, syscall.SIGKILL) //nolint:errcheck
	return <-done
}

// checkNoLeftovers fails the test if any live process still carries the
// run's marker a few seconds after the run ended, and kills those.
func checkNoLeftovers(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := markedProcs(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var desc []string
			for _, pid := range left {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				desc = append(desc, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
				syscall.Kill(pid, syscall.SIGKILL) //nolint:errcheck
			}
			t.Errorf("processes left behind: %s", strings.Join(desc, "; "))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// markedProcs lists live (not zombie) processes whose environment holds
// the marker.
func markedProcs(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	needle := []byte("WALKIE_FAKEMODEL_TEST=" + marker + "\x00")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// State follows the parenthesised command name.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// ---- samples in testdata/ ----

// sample records one real run for the parser tests that come later.
type sample struct {
	CLI        string   `json:"cli"`
	Case       string   `json:"case"`
	Args       []string `json:"args"`
	ExitCode   int      `json:"exit_code"`
	Signal     string   `json:"signal,omitempty"`
	DurationMS int64    `json:"duration_ms"`
	KilledAt   string   `json:"sigterm_by_test_after,omitempty"`
	Stdout     string   `json:"stdout_file,omitempty"`
	Stderr     string   `json:"stderr_file,omitempty"`
	Note       string   `json:"note,omitempty"`
}

var (
	samplesMu sync.Mutex
	samples   = map[string]sample{}
)

// save writes a run's output under testdata/ when -update is set: the
// main sample under its given name (claude-result.json), everything else
// under runs/CASE.stdout and .stderr, each run indexed in runs/cases.json
// with its exit code and duration.
func save(t *testing.T, cli, kase string, args []string, res cliResult, note string, mainFile string) {
	t.Helper()
	if !*update {
		return
	}
	s := sample{CLI: cli, Case: kase, Args: args, ExitCode: res.code, Signal: res.signal, DurationMS: res.dur.Milliseconds(), Note: note}
	if res.killed {
		s.KilledAt = res.dur.Round(time.Second).String()
	}
	// The CLIs print absolute paths (stack traces from .cache/clis); the
	// samples are committed, so the checkout's location is scrubbed.
	root, _ := filepath.Abs(filepath.Join(testdataDir, "..", "..", ".."))
	write := func(rel, content string) string {
		if content == "" {
			return ""
		}
		content = strings.ReplaceAll(content, root+"/", "<repo>/")
		p := filepath.Join(testdataDir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return rel
	}
	if mainFile != "" {
		s.Stdout = write(mainFile, res.stdout)
	} else {
		s.Stdout = write(filepath.Join("runs", kase+".stdout"), res.stdout)
	}
	s.Stderr = write(filepath.Join("runs", kase+".stderr"), res.stderr)
	samplesMu.Lock()
	samples[kase] = s
	samplesMu.Unlock()
}

// TestMain writes runs/cases.json after an -update run, merging in the
// cases of earlier runs that this one did not repeat.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if *update && len(samples) > 0 {
		p := filepath.Join(testdataDir, "runs", "cases.json")
		old := map[string]sample{}
		if b, err := os.ReadFile(p); err == nil {
			var list []sample
			if json.Unmarshal(b, &list) == nil {
				for _, s := range list {
					old[s.Case] = s
				}
			}
		}
		for k, v := range samples {
			old[k] = v
		}
		var list []sample
		for _, s := range old {
			list = append(list, s)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Case < list[j].Case })
		b, _ := json.MarshalIndent(list, "", "  ")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			os.WriteFile(p, append(b, '\n'), 0o644) //nolint:errcheck
		}
	}
	os.Exit(code)
}

// ---- shared expectations ----

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, clip(got))
		}
	}
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

func wantExit(t *testing.T, res cliResult, code int) {
	t.Helper()
	if res.killed {
		t.Fatalf("still running after %v (want exit %d)\nstdout: %s\nstderr: %s", res.dur, code, clip(res.stdout), clip(res.stderr))
	}
	if res.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", res.code, code, clip(res.stdout), clip(res.stderr))
	}
}

func wantLine(t *testing.T, dir, line string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "turn.md"))
	if err != nil || strings.TrimSpace(string(b)) != line {
		t.Errorf("turn.md = %q (%v), want the line %q", b, err, line)
	}
}

func wantNoFile(t *testing.T, dir string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(dir, "turn.md")); err == nil {
		t.Errorf("turn.md written in a read-only mode: %q", b)
	}
}

// appendScript is the model's side of a successful turn: run the command
// that appends line, then finish.
func appendReplies(line string) []Reply {
	return []Reply{Shell("echo " + line + " >> turn.md"), Text("Appended my line to turn.md.")}
}

// skipShort skips the tests that wait 15-20 s to show a CLI does not end
// by itself.
func skipShort(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: waits to show the CLI keeps waiting; run without -short")
	}
}

// killedWaiting asserts a run that the test had to end, having seen the
// model request arrive: the CLI would have waited on.
func killedWaiting(t *testing.T, srv *Server, res cliResult) {
	t.Helper()
	if !res.killed {
		t.Fatalf("ended by itself with exit %d after %v; expected it to keep waiting\nstdout: %s\nstderr: %s", res.code, res.dur, clip(res.stdout), clip(res.stderr))
	}
	if srv != nil && len(srv.Requests()) == 0 {
		t.Error("the server never saw a request")
	}
}

// The preset flags are the same for an ordinary user: run each CLI's
// successful turn as nobody (when the tests run as root, as here).
func TestCLIsAsOrdinaryUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("already an ordinary user: the other CLI tests cover it")
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	t.Run("claude", func(t *testing.T) {
		t.Parallel()
		srv := Start(t, Script{Anthropic: appendReplies("claude-as-nobody")})
		run := claudeRun(t, srv.URL, claudeArgs)
		run.cred = nobody
		res := run.run(t)
		wantExit(t, res, 0)
		wantLine(t, res.dir, "claude-as-nobody")
	})
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		srv := Start(t, Script{OpenAI: appendReplies("codex-as-nobody")})
		run := codexRun(t, srv.URL, codexArgs)
		run.cred = nobody
		// CODEX_HOME lives outside HOME here; hand it over too.
		giveTo(t, strings.TrimPrefix(run.env[0], "CODEX_HOME="), nobody)
		res := run.run(t)
		wantExit(t, res, 0)
		wantLine(t, res.dir, "codex-as-nobody")
	})
	t.Run("gemini", func(t *testing.T) {
		t.Parallel()
		srv := Start(t, Script{Gemini: appendReplies("gemini-as-nobody")})
		policy := geminiPolicy(t)
		giveTo(t, policy, nobody)
		run := geminiRun(t, srv.URL, geminiArgs("--skip-trust", "--policy", policy))
		run.cred = nobody
		res := run.run(t)
		wantExit(t, res, 0)
		wantLine(t, res.dir, "gemini-as-nobody")
	})
}
