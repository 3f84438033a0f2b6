package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// A whole debate in-process: the observer sees each turn start and be
// recorded, then the end; the state is left clean.
func TestRunEvents(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": shAgent("echo working"), "b": shAgent("echo working")}, "a", "b")
	var mu sync.Mutex
	var kinds []EventKind
	sum, err := Run(context.Background(), Options{File: file, Config: cfg, Observe: func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if e.Kind != EventOutput && (len(kinds) == 0 || kinds[len(kinds)-1] != e.Kind) {
			kinds = append(kinds, e.Kind)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != walkie.StatusMaxRounds || sum.Turns != 4 || len(sum.Attempts) != 4 || sum.Interrupted {
		t.Fatalf("summary %+v", sum)
	}
	want := []EventKind{EventTurnStarted, EventTurnRecorded, EventTurnStarted, EventTurnRecorded,
		EventTurnStarted, EventTurnRecorded, EventTurnStarted, EventTurnRecorded, EventDebateEnded}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v", kinds)
	}
	st := loadState(t, file)
	if st.Running != nil || len(st.Attempts) != 0 {
		t.Errorf("state after the run: running %+v attempts %v", st.Running, st.Attempts)
	}
	for i, r := range turnLog(t, file) {
		if r.Outcome != walkie.OutcomeAccepted || r.Attempt != 1 || r.Seq != i+1 {
			t.Errorf("attempt %d: %+v", i, r)
		}
	}
}

// A failed attempt's outcome is counted before the retry starts, and the
// last one's outcome is in state.json when Run returns.
func TestRunRetriesThenFails(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": "[sh, -c, 'exit 3']", "b": shAgent("")}, "a", "b")
	sum, err := Run(context.Background(), Options{File: file, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != walkie.StatusFailed || len(sum.Attempts) != 2 {
		t.Fatalf("summary %+v", sum)
	}
	for i, r := range sum.Attempts {
		if r.Outcome != walkie.OutcomeCrashed || r.Attempt != i+1 || r.ExitCode == nil || *r.ExitCode != 3 {
			t.Errorf("attempt %d: %+v", i, r)
		}
	}
	st := loadState(t, file)
	if st.Status != walkie.StatusFailed || st.Attempts["1"] != 2 || st.Running != nil {
		t.Errorf("state: %s attempts %v running %v", st.Status, st.Attempts, st.Running)
	}
}

// Cancelling the context ends the running agent at once; the attempt is
// recorded as interrupted and does not count.
func TestRunCancelled(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": "[sh, -c, 'exec sleep 30']", "b": shAgent("")}, "a", "b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var sum Summary
	var err error
	go func() {
		defer close(done)
		sum, err = Run(ctx, Options{File: file, Config: cfg})
	}()
	sessiontest.WaitFor(t, 10*time.Second, "the agent running", func() bool {
		st, err := walkie.LoadState(stateDir(t, file))
		return err == nil && st.Running != nil && walkie.LoadSessionNote(stateDir(t, file), st.Running.Session) != nil
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted || len(sum.Attempts) != 1 || sum.Attempts[0].Outcome != walkie.OutcomeInterrupted {
		t.Fatalf("summary %+v", sum)
	}
	if st := loadState(t, file); st.Running != nil || len(st.Attempts) != 0 || st.Status != "" {
		t.Errorf("state: %s running %v attempts %v", st.Status, st.Running, st.Attempts)
	}
}

// A command that does not exist is bad input, leaves nothing running and
// announces no turn.
func TestRunCommandNotFound(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": "[no-such-walkie-agent]", "b": shAgent("")}, "a", "b")
	var events []Event
	_, err := Run(context.Background(), Options{File: file, Config: cfg, Observe: func(e Event) { events = append(events, e) }})
	if !errors.Is(err, ErrBadInput) {
		t.Fatalf("err %v, want bad input", err)
	}
	if st := loadState(t, file); st.Running != nil {
		t.Errorf("running attempt left: %+v", st.Running)
	}
	// Notifiers must not see a turn that started and never ended.
	for _, e := range events {
		if e.Kind == EventTurnStarted {
			t.Errorf("turn-started announced for a command that never ran: %+v", e)
		}
	}
}

// Two controllers cannot run one debate.
func TestRunLocked(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	lock, err := walkie.TryRunLock(stateDir(t, file))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if _, err := Run(context.Background(), Options{File: file, Config: cfg}); !errors.Is(err, walkie.ErrLocked) {
		t.Fatalf("err %v, want ErrLocked", err)
	}
}

// While an interrupted session takes its kill grace to end, the
// controller waits; it does not spin.
func TestRunCancelledWaitsIdle(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": `[sh, -c, "trap '' TERM; exec sleep 30"]`, "b": shAgent("")}, "a", "b")
	agent, err := cfg.Agent("a")
	if err != nil {
		t.Fatal(err)
	}
	agent.KillGrace = time.Second
	cfg.Agents["a"] = agent
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = Run(ctx, Options{File: file, Config: cfg})
	}()
	sessiontest.WaitFor(t, 10*time.Second, "the agent running", func() bool {
		st, err := walkie.LoadState(stateDir(t, file))
		return err == nil && st.Running != nil && walkie.LoadSessionNote(stateDir(t, file), st.Running.Session) != nil
	})
	before := cpuTime(t)
	cancel()
	<-done
	if used := cpuTime(t) - before; used > 300*time.Millisecond {
		t.Errorf("the controller used %s of CPU waiting out a 1s kill grace", used)
	}
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Issue 11: debate turns built their environment in config, where an
// allow-list entry XDG_* let the real XDG_*_HOME through although the
// session had a private HOME. Now the session alone builds it: with a
// private HOME none of the caller's XDG homes reaches a turn, whatever the
// allow-list says, while other allowed variables do.
func TestTurnNeverSeesTheRealXDGHomes(t *testing.T) {
	dir := t.TempDir()
	envOut := filepath.Join(dir, "env.txt")
	t.Setenv("XDG_CONFIG_HOME", "/real/home/.config")
	t.Setenv("XDG_DATA_HOME", "/real/home/.local/share")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	t.Setenv("WALKIE_TEST_ALLOWED", "yes")
	file := filepath.Join(dir, "x.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"a", "b"}, MaxRounds: 1, Briefing: []byte("Decide.\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	// The agent's sandbox lets it write this one file of the debate's folder.
	if err := os.WriteFile(envOut, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	y := "defaults:\n  grace: 100ms\n  kill_grace: 500ms\n  timeout: 20s\nagents:\n  a:\n    command: " +
		shAgent("env > "+envOut) + "\n    env_allow: [\"XDG_*\", WALKIE_TEST_ALLOWED]\n    sandbox_write: [" + envOut + "]\n  b:\n    command: " + shAgent("") + "\n"
	cfg, err := config.Parse(filepath.Join(dir, "walkie.yaml"), []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{File: file, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	env := string(readFile(t, envOut))
	for _, leak := range []string{"/real/home/.config", "/real/home/.local/share"} {
		if strings.Contains(env, leak) {
			t.Errorf("the turn saw the real home %s:\n%s", leak, env)
		}
	}
	for _, want := range []string{"WALKIE_TEST_ALLOWED=yes", "XDG_RUNTIME_DIR=/run/user/1000", "HOME=" + os.TempDir()} {
		if !strings.Contains(env, want) {
			t.Errorf("the turn's environment lacks %s:\n%s", want, env)
		}
	}
}

// The parse Settle hands back saves parsing the record again, never
// verifying it: a recorded turn edited between two turns (here by the
// observer, which runs after the turn is recorded and before the next
// look) stops the run before another agent starts.
func TestRunVerifiesARecordEditedBetweenTurns(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	var edited bool
	sum, err := Run(context.Background(), Options{File: file, Config: cfg, Observe: func(e Event) {
		if e.Kind != EventTurnRecorded || edited {
			return
		}
		edited = true
		b, err := os.ReadFile(file)
		if err == nil {
			err = os.WriteFile(file, []byte(strings.Replace(string(b), "A turn.", "A tUrn.", 1)), 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}})
	var ce *walkie.ChainError
	if !errors.Is(err, ErrBadInput) || !errors.As(err, &ce) || ce.Seq != 1 {
		t.Fatalf("Run after an edit of turn 1 = %v; want bad input, a chain error at entry 1", err)
	}
	if len(sum.Attempts) != 1 {
		t.Errorf("%d attempts ran; want the one before the edit", len(sum.Attempts))
	}
}

// A participant posts its own turn between the controller's decision and
// the attempt's start (here inside Acquire, the last step before it): the
// post is accepted, nothing of the attempt begins, and the run decides
// again and goes on with the next party instead of failing.
func TestRunDecidesAgainWhenATurnIsPostedMeanwhile(t *testing.T) {
	file, cfg := testDebate(t, 1, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	posted := false
	acquire := func(_ context.Context, agent string) (func(float64), error) {
		if agent == "a" && !posted {
			posted = true
			if _, err := walkie.Append(file, walkie.Post{From: "a", Body: []byte("Posted by a itself.\n")}); err != nil {
				t.Errorf("a's own post: %v", err)
			}
		}
		return func(float64) {}, nil
	}
	sum, err := Run(context.Background(), Options{File: file, Config: cfg, Acquire: acquire})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if sum.Status != walkie.StatusMaxRounds || sum.Turns != 2 || len(sum.Attempts) != 1 || sum.Attempts[0].Agent != "b" {
		t.Fatalf("summary %+v, want a's post as turn 1 and one attempt, b's", sum)
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Verify(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(d.Entries[0].Body), "Posted by a itself.") {
		t.Errorf("turn 1 is %q, want a's post", d.Entries[0].Body)
	}
}
