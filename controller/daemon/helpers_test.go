package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// bins holds the programs built once for this test binary: the scripted
// fake agent, and walkie itself for the tests that kill the daemon.
var bins struct {
	dir       string
	fakeagent string
	walkie    string
	once      sync.Once
	walkieErr error
}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	dir, err := os.MkdirTemp("", "walkie-daemon-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.dir = dir
	bins.fakeagent = filepath.Join(dir, "fakeagent")
	if err := goBuild(bins.fakeagent, "github.com/walkie-sh/walkie/cmd/fakeagent"); err != nil {
		fmt.Fprintln(os.Stderr, "building fakeagent:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// walkieBin builds cmd/walkie on first use.
func walkieBin(t testing.TB) string {
	t.Helper()
	bins.once.Do(func() {
		bins.walkie = filepath.Join(bins.dir, "walkie")
		bins.walkieErr = goBuild(bins.walkie, "github.com/walkie-sh/walkie/cmd/walkie")
	})
	if bins.walkieErr != nil {
		t.Fatalf("building walkie: %v", bins.walkieErr)
	}
	return bins.walkie
}

// fakeAgent is a config entry for a fake agent with the given flags.
func fakeAgent(name string, flags ...string) string {
	argv := []string{bins.fakeagent, "--file", "{file}", "--agent", "{agent}", "--turn", "{turn}", "--round", "{round}"}
	argv = append(argv, flags...)
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("  %s:\n    command: [%s]\n    usage: none\n", name, strings.Join(q, ", "))
}

// testConfig is a config with short timings, the given agents and the
// given top-level YAML (limits, notify).
func testConfig(t testing.TB, agents []string, extra string) *config.Config {
	t.Helper()
	y := configYAML(agents, extra)
	cfg, err := config.Parse("", []byte(y))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	return cfg
}

func configYAML(agents []string, extra string) string {
	// The fake agent, run by a wrapper of a test's, too, is in its own
	// folder: every sandbox opens it.
	return "defaults:\n  timeout: 30s\n  stall: 20s\n  grace: 50ms\n  kill_grace: 300ms\n  retries: 1\n  debounce: 0s\n" +
		fmt.Sprintf("  sandbox_read: [%q]\n", filepath.Dir(bins.fakeagent)) + "agents:\n" + strings.Join(agents, "") + extra
}

// testPeople are the participants of these tests who are persons.
var testPeople = []string{"alice", "bob", "person"}

// newDebate creates an approved debate.
func newDebate(t testing.TB, dir, id string, maxRounds int, participants ...string) string {
	t.Helper()
	file := filepath.Join(dir, id+".walkie.md")
	var people []string
	for _, p := range participants {
		if slices.Contains(testPeople, p) {
			people = append(people, p)
		}
	}
	if err := walkie.Init(file, walkie.InitOptions{ID: id, Participants: participants, People: people, MaxRounds: maxRounds,
		Briefing: []byte("Decide the shape of the " + id + " API. Sign off when you agree.\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	return file
}

// running is a daemon started by startDaemon.
type running struct {
	*Daemon
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// stop ends the daemon and waits for it; a second call does nothing.
func (r *running) stop(t testing.TB) {
	t.Helper()
	if r.stopped {
		return
	}
	r.stopped = true
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("daemon: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the daemon did not stop within 30s")
	}
}

func startDaemon(t testing.TB, o Options) *running {
	t.Helper()
	if o.Log == nil {
		o.Log = testLogger(t)
	}
	d, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Daemon: d, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	return r
}

// testLogger logs warnings and errors into the test's output, where a
// failure shows them; WALKIE_TEST_LOG=debug shows everything.
func testLogger(t testing.TB) *zap.Logger {
	level := zap.WarnLevel
	if os.Getenv("WALKIE_TEST_LOG") == "debug" {
		level = zap.DebugLevel
	}
	return zaptest.NewLogger(t, zaptest.Level(level))
}

// status is a debate's status as the record and state say.
func status(t testing.TB, file string) string {
	t.Helper()
	d, err := walkie.Load(file)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	st, err := walkie.LoadState(walkie.StateDir(file, d.Meta.ID))
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return walkie.DebateStatus(&d.Meta, d.Progress(), st)
}

// turnLog reads a debate's turn log.
func turnLog(t testing.TB, file string) []controller.TurnRecord {
	t.Helper()
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := controller.ReadTurnLog(walkie.StateDir(file, meta.ID))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// checkRecord asserts that the record verifies and that every recorded
// turn was accepted exactly once in the turn log.
func checkRecord(t testing.TB, file string) {
	t.Helper()
	d, err := walkie.Load(file)
	if err != nil {
		t.Errorf("%s: %v", file, err)
		return
	}
	if err := d.Verify(); err != nil {
		t.Errorf("%s: verify: %v", file, err)
	}
	accepted := map[int]int{}
	for _, r := range turnLog(t, file) {
		if r.Outcome == walkie.OutcomeAccepted {
			accepted[r.Turn]++
		}
	}
	p := d.Progress()
	for turn := 1; turn <= p.Turns; turn++ {
		if accepted[turn] != 1 {
			t.Errorf("%s: turn %d accepted %d times in turns.jsonl, want exactly once", filepath.Base(file), turn, accepted[turn])
		}
	}
	if len(accepted) != p.Turns {
		t.Errorf("%s: %d turns accepted in the log, %d in the record", filepath.Base(file), len(accepted), p.Turns)
	}
}

// settled reports whether every turn in the record is in the turn log
// and no attempt is running: the record is stamped before the log line is
// written, so a test that saw the last turn must wait for this.
func settled(t testing.TB, file string) bool {
	d, err := walkie.Load(file)
	if err != nil {
		return false
	}
	st, err := walkie.LoadState(walkie.StateDir(file, d.Meta.ID))
	if err != nil || st.Running != nil {
		return false
	}
	n := 0
	for _, r := range turnLog(t, file) {
		if r.Outcome == walkie.OutcomeAccepted {
			n++
		}
	}
	return n == d.Progress().Turns
}

// interval is one session's lifetime from the turn log.
type interval struct {
	agent      string
	start, end time.Time
}

// maxOverlap is the most intervals open at once (half-open [start, end):
// a session that starts in the millisecond another ended does not overlap).
func maxOverlap(iv []interval) int {
	type point struct {
		at    time.Time
		delta int
	}
	var pts []point
	for _, x := range iv {
		pts = append(pts, point{x.start, +1}, point{x.end, -1})
	}
	slices.SortFunc(pts, func(a, b point) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // ends before starts at the same instant
	})
	n, max := 0, 0
	for _, p := range pts {
		n += p.delta
		max = maxInt(max, n)
	}
	return max
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func loadConfig(t testing.TB, path string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// postAs appends an unsigned turn by a participant without a command.
func postAs(t testing.TB, file, who string) {
	t.Helper()
	if _, err := walkie.Append(file, walkie.Post{From: who, Body: []byte("Over to you.\n")}); err != nil {
		t.Fatal(err)
	}
}
