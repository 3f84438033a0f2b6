package temporal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/temporal/blob"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// newTestWorker is a worker whose agent alice runs command (a YAML flow
// sequence) with fast timings; client is not needed to run the activity.
func newTestWorker(t *testing.T, command, extra string) *Worker {
	t.Helper()
	y := "defaults:\n  home: inherit\n  grace: 100ms\n  kill_grace: 500ms\n  timeout: 20s\n  stall: 10s\nagents:\n  alice:\n    command: " + command + "\n" + extra
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "walkie.yaml"), []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	store, err := blob.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	carry, err := newCarrier(t.Context(), store, testBuild)
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{o: WorkerOptions{Config: cfg, Dir: t.TempDir(), Blobs: store}, log: zap.NewNop(), identity: "test-worker", stopping: t.Context(), carry: carry}
	w.eng = engine.New(cfg, zap.NewNop())
	t.Cleanup(w.eng.Close)
	return w
}

// testBuild is the walkie version the tests' homes and workers run.
const testBuild = "v0.0.0-test"

// homeHello is what a home of the test build, keeping its blobs where w
// reads them, says.
func homeHello(w *Worker) Hello { return w.carry.says() }

// turnInput is turn 1 of a fresh record, as the home of w plans it.
func turnInput(t *testing.T, w *Worker) TurnInput {
	t.Helper()
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"alice", "bob"}, MaxRounds: 2, Briefing: []byte("Decide.\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	record, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return TurnInput{Hello: homeHello(w), Debate: "d", FileName: "d.walkie.md", Record: Blob{Data: record}, Turn: 1, Round: 1, Attempt: 1, Participant: "alice", Agent: "alice",
		PromptName: "turn", PromptSource: "Write turn {{.Turn}} of {{.File}} as {{.Agent}}.",
		Prompt: config.PromptData{Agent: "alice", Turn: 1, Round: 1, MaxRounds: 2, Participants: []string{"alice", "bob"}},
		Timing: Timing{Timeout: 20 * time.Second, Stall: 10 * time.Second, Grace: 100 * time.Millisecond, KillGrace: 500 * time.Millisecond}}
}

// got is what a Blob carries, over w's store.
func got(t *testing.T, w *Worker, b *Blob) []byte {
	t.Helper()
	if b == nil {
		return nil
	}
	data, err := w.carry.bytes(t.Context(), *b, blob.Max)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func runTurnActivity(t *testing.T, w *Worker, in TurnInput, beats func(Progress)) (TurnResult, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdkLogger{zap.NewNop().Sugar()})
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(w.Turn, activity.RegisterOptions{Name: ActTurn})
	if beats != nil {
		env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
			var p Progress
			if details.Get(&p) == nil {
				beats(p)
			}
		})
	}
	v, err := env.ExecuteActivity(ActTurn, in)
	if err != nil {
		return TurnResult{}, err
	}
	var r TurnResult
	if err := v.Get(&r); err != nil {
		t.Fatal(err)
	}
	return r, nil
}

// The agent works on a copy of the record in the worker's directory, and
// its prompt names that copy, never the home's path; what it wrote, the
// session's result and its transcript come back.
func TestTurnRunsOnACopyWithAPromptForItsPath(t *testing.T) {
	w := newTestWorker(t, `[sh, -c, 'echo "prompt: $0"; sleep 1.2; printf "\n## Turn 1 · alice\nFrom the worker.\n" >> "$1"', "{prompt}", "{file}"]`, "")
	in := turnInput(t, w)
	var mu sync.Mutex
	var beats []Progress
	r, err := runTurnActivity(t, w, in, func(p Progress) {
		mu.Lock()
		beats = append(beats, p)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	after, text := got(t, w, r.After), got(t, w, &r.Text)
	if !bytes.HasPrefix(after, in.Record.Data) || !bytes.Contains(after, []byte("From the worker.")) {
		t.Fatalf("the agent's version does not hold its turn on top of the record:\n%s", after)
	}
	copyPath := filepath.Join(r.Kept, "work", "d.walkie.md")
	if !strings.HasPrefix(r.Kept, w.o.Dir) || !bytes.Contains(text, []byte("prompt: Write turn 1 of "+copyPath+" as alice.")) {
		t.Fatalf("the prompt did not name the worker's copy %s; transcript:\n%s", copyPath, text)
	}
	if r.Worker != "test-worker" || r.Session.Worker != "test-worker" || r.Session.ExitCode != 0 || r.Hello != w.carry.says() {
		t.Fatalf("result %+v", r.Session)
	}
	if _, err := os.Stat(filepath.Join(r.Kept, "work")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the attempt's copy is left in %s", r.Kept)
	}
	if _, err := os.Stat(r.Session.TextPath); err != nil {
		t.Fatalf("the whole transcript is not kept on the worker: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The test environment throttles heartbeats to one per 30s whatever
	// the worker's options; the progress they carry is checked end to end
	// (cmd/walkie/scaleout shows it on the fleet page).
	if len(beats) == 0 || beats[0].Worker != "test-worker" {
		t.Fatalf("heartbeats %+v, want the worker heartbeating while the agent ran", beats)
	}
}

// auth is never retried: the activity fails with the attempt in the
// details, so the home records it and no other worker tries.
func TestTurnFailsAuthWithTheAttempt(t *testing.T) {
	w := newTestWorker(t, `[sh, -c, 'echo "Not logged in · Please run /login"; sleep 5']`,
		"    rules: [{match: \"Not logged in\", outcome: auth, detail: \"log alice in\"}]\n")
	_, err := runTurnActivity(t, w, turnInput(t, w), nil)
	var app *temporalsdk.ApplicationError
	if !errors.As(err, &app) || app.Type() != string(walkie.OutcomeAuth) {
		t.Fatalf("error %v, want an application error of type auth", err)
	}
	var r TurnResult
	if err := app.Details(&r); err != nil || r.Session.RuleOutcome != "auth" || r.Session.Detail != "log alice in" {
		t.Fatalf("details %+v (%v), want the auth attempt", r.Session, err)
	}
}

// A command this machine cannot start is bad input, named with the
// worker, and never retried.
func TestTurnWithAMissingCommandIsBadInput(t *testing.T) {
	w := newTestWorker(t, `[no-such-agent-cli-here]`, "")
	_, err := runTurnActivity(t, w, turnInput(t, w), nil)
	var app *temporalsdk.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeBadInput || !app.NonRetryable() || !strings.Contains(app.Error(), "test-worker") {
		t.Fatalf("error %v, want non-retryable bad input naming the worker", err)
	}
	for _, bad := range []func(*TurnInput){
		func(in *TurnInput) { in.FileName = "../../escape.md" },
		func(in *TurnInput) { in.Debate = ".." },
		func(in *TurnInput) { in.Participant = "a/b" },
	} {
		in := turnInput(t, w)
		bad(&in)
		if _, err := runTurnActivity(t, w, in, nil); !errors.As(err, &app) || app.Type() != ErrTypeBadInput || !strings.Contains(app.Error(), "not a plain file name") {
			t.Fatalf("error %v, want bad input for a path outside the worker's directory", err)
		}
	}
	in := turnInput(t, w)
	in.Agent = "carol"
	if _, err := runTurnActivity(t, w, in, nil); !errors.As(err, &app) || app.Type() != ErrTypeBadInput || !strings.Contains(app.Error(), "carol") {
		t.Fatalf("error %v, want bad input for an agent this worker lacks", err)
	}
}

// The home's timing governs the session, whatever the worker's config
// says: here the home's one-second timeout ends a sleeping agent.
func TestTurnTakesTheHomesTiming(t *testing.T) {
	w := newTestWorker(t, `[sleep, "30"]`, "")
	in := turnInput(t, w)
	in.Timeout = time.Second
	start := time.Now()
	r, err := runTurnActivity(t, w, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Session.Ending != session.EndTimeout || time.Since(start) > 10*time.Second {
		t.Fatalf("ending %s after %s, want the home's 1s timeout", r.Session.Ending, time.Since(start))
	}
}

// A worker that died left its agent running (the group outlives it): the
// next start ends it and removes the attempt's copy.
func TestWorkerStartEndsSessionsLeftBehind(t *testing.T) {
	w := newTestWorker(t, `[true]`, "")
	start := func(attr *syscall.SysProcAttr, env ...string) (*exec.Cmd, chan struct{}) {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr, cmd.Env = attr, append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
		return cmd, done
	}
	sid := session.NewID()
	// The session's leader, in its group; and a helper it left that moved
	// to a session of its own, found only by the session's id in its
	// environment; and the session's private HOME and TMPDIR.
	lead, leadDone := start(&syscall.SysProcAttr{Setpgid: true})
	_, helperDone := start(&syscall.SysProcAttr{Setsid: true}, session.SessionVar+"="+sid)
	private := []string{filepath.Join(os.TempDir(), "walkie-home-"+sid), filepath.Join(os.TempDir(), "walkie-tmp-"+sid)}
	for _, d := range private {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sandbox, err := os.MkdirTemp("", "walkie-review-")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(w.o.Dir, "d", "0001-alice-1.1")
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	id, err := session.Identify(lead.Process.Pid)
	if err != nil {
		t.Skipf("no process identity here: %v", err)
	}
	b, _ := json.Marshal(sessionNote{ProcIdentity: id, Session: sid, Sandbox: sandbox})
	if err := os.WriteFile(filepath.Join(dir, sessionFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	w.cleanStale()
	for what, done := range map[string]chan struct{}{"the session left behind": leadDone, "the helper it left": helperDone} {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s is still running", what)
		}
	}
	for _, p := range append(private, sandbox, filepath.Join(dir, "work"), filepath.Join(dir, sessionFile)) {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left", p)
		}
	}
}

func TestTurnTimeoutsMapTheAgentsTiming(t *testing.T) {
	for _, tc := range []struct {
		stall, wantHB time.Duration
	}{
		{5 * time.Minute, maxHeartbeat},
		{20 * time.Second, 20 * time.Second},
		{time.Second, minHeartbeat},
		{0, maxHeartbeat},
	} {
		stc, hb := turnTimeouts(config.Timing{Timeout: 10 * time.Minute, Stall: tc.stall, Grace: time.Second, KillGrace: time.Second})
		if hb != tc.wantHB || stc != 10*time.Minute+2*time.Second+uploadMargin {
			t.Errorf("stall %s: heartbeat %s, start-to-close %s", tc.stall, hb, stc)
		}
	}
}

func TestQueues(t *testing.T) {
	q, err := ParseQueues([]string{"codex=gpu-codex"})
	if err != nil || AgentQueue("codex", q) != "gpu-codex" || AgentQueue("claude", q) != "walkie-agent-claude" {
		t.Fatalf("queues %v, %v", q, err)
	}
	for _, bad := range []string{"codex", "=q", "codex="} {
		if _, err := ParseQueues([]string{bad}); err == nil {
			t.Errorf("--queue %q accepted", bad)
		}
	}
	if a, b := DefaultHomeQueue("/srv/a"), DefaultHomeQueue("/srv/b"); a == b || a != DefaultHomeQueue("/srv/a") {
		t.Errorf("home queues %q and %q: want stable and distinct per directory", a, b)
	}
}

func TestConnectionTLS(t *testing.T) {
	if c, err := (Connection{HostPort: "h:7233"}).tlsConfig(); c != nil || err != nil {
		t.Fatalf("plain connection: %v, %v", c, err)
	}
	if c, err := (Connection{APIKey: "k"}).tlsConfig(); c == nil || err != nil {
		t.Fatalf("an API key goes over TLS: %v, %v", c, err)
	}
	if _, err := (Connection{Cert: "c.pem"}).tlsConfig(); err == nil || !strings.Contains(err.Error(), "--tls-key") {
		t.Fatalf("a certificate without its key: %v", err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (Connection{CA: ca}).tlsConfig(); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a CA file without a certificate: %v", err)
	}
}

// An agent that left a gibibyte as its version of the record (sparse: no
// disk): the worker reads no more of it than the home's judge would, and
// sends that, by reference; the judge at home finds it too big.
func TestTurnResultDoesNotReadAHugeRecord(t *testing.T) {
	w := newTestWorker(t, `[true]`, "")
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(file, 1<<30); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := w.result(t.Context(), file, nil, t.TempDir(), engine.Result{}, 1)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	limit := walkie.JudgeLimit(&walkie.Meta{}, nil)
	if r.After == nil || r.After.Ref == nil || r.After.Size() != limit+1 {
		t.Fatalf("sent %+v, want the first %d bytes by reference", r.After, limit+1)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("allocated %d MiB to send it", n>>20)
	}
}
