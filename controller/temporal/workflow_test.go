package temporal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// fakeHome plays the home activities over a debate held in memory: two
// participants, converged after goal accepted turns.
type fakeHome struct {
	t     *testing.T
	goal  int
	stale int // Begin answers stale this many times
	// decideErr, when set, is Decide's error.
	decideErr error
	// turn is the turn activity.
	turn func(ctx context.Context, in TurnInput) (TurnResult, error)
	// tableAt, when set, is the turn a round table's own step stands for
	// (Decide plans it once, then the turn).
	tableAt int
	tabled  []TableInput

	mu       sync.Mutex
	turns    int
	halted   bool
	calls    []string
	settles  []SettleInput
	turnSeen []TurnInput
	infos    []activity.Info
}

var started = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func (f *fakeHome) call(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
}

func (f *fakeHome) Decide(_ context.Context, _ DebateInput) (Plan, error) {
	f.call("decide")
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.decideErr != nil:
		return Plan{}, f.decideErr
	case f.halted:
		return Plan{Action: string(controller.ActEnd), Status: walkie.StatusHalted, Why: "halted by a person"}, nil
	case f.turns >= f.goal:
		return Plan{Action: string(controller.ActEnd), Status: walkie.StatusConverged, Why: "signed"}, nil
	}
	n := f.turns + 1
	who := []string{"alice", "bob"}[(n-1)%2]
	if n == f.tableAt && len(f.tabled) == 0 {
		return Plan{Action: string(controller.ActRun), Ref: controller.TurnRef{Turn: n, Participant: who, Attempt: 1}, Table: true}, nil
	}
	return Plan{Action: string(controller.ActRun), Ref: controller.TurnRef{Turn: n, Round: (n + 1) / 2, Participant: who, Attempt: 1},
		Queue: "q-" + who, Turn: TurnInput{Debate: "d", Turn: n, Participant: who, Agent: who, Attempt: 1},
		StartToClose: time.Hour, Heartbeat: 7 * time.Second}, nil
}

func (f *fakeHome) Begin(_ context.Context, in BeginInput) (Began, error) {
	f.call("begin")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stale > 0 {
		f.stale--
		return Began{Stale: true}, nil
	}
	return Began{Started: started, Record: Blob{Data: []byte(fmt.Sprintf("record before turn %d", in.Ref.Turn))}}, nil
}

func (f *fakeHome) Turn(ctx context.Context, in TurnInput) (TurnResult, error) {
	f.call("turn")
	f.mu.Lock()
	f.turnSeen = append(f.turnSeen, in)
	f.infos = append(f.infos, activity.GetInfo(ctx))
	f.mu.Unlock()
	if f.turn != nil {
		return f.turn(ctx, in)
	}
	return acceptedResult(in), nil
}

func acceptedResult(in TurnInput) TurnResult {
	return TurnResult{After: &Blob{Data: append(in.Record.Data, "\n## Turn ..."...)}, Worker: "w", Session: engine.Result{Result: session.Result{Ending: session.EndCaller}}}
}

func (f *fakeHome) Settle(_ context.Context, in SettleInput) (Settled, error) {
	f.call("settle")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settles = append(f.settles, in)
	out := walkie.OutcomeCrashed
	if in.Result == nil {
		f.goal = 0 // lost: the retries are spent
	}
	if r := in.Result; r != nil {
		switch {
		case r.Session.Stop != "":
			out = r.Session.Stop
			f.halted = out == walkie.OutcomeHalted
		case r.Session.Ending == session.EndCaller:
			out = walkie.OutcomeAccepted
			f.turns++
		default:
			out = walkie.Outcome(r.Session.RuleOutcome)
			f.goal = 0 // an auth failure ends the debate
		}
	}
	return Settled{Record: controller.TurnRecord{Turn: in.Ref.Turn, Agent: in.Ref.Participant, Outcome: out}}, nil
}

func (f *fakeHome) Notify(_ context.Context, _ NotifyInput) error { f.call("notify"); return nil }

func (f *fakeHome) Table(ctx context.Context, in TableInput) (Tabled, error) {
	f.call("table")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tabled = append(f.tabled, in)
	f.infos = append(f.infos, activity.GetInfo(ctx))
	return Tabled{Attempts: 2}, nil
}

func (f *fakeHome) Abandon(_ context.Context, _ AbandonInput) error { f.call("abandon"); return nil }

// run executes the workflow against f in the SDK's test environment.
func (f *fakeHome) run(setup func(env *testsuite.TestWorkflowEnvironment)) *testsuite.TestWorkflowEnvironment {
	f.t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdkLogger{zap.NewNop().Sugar()})
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Debate, workflow.RegisterOptions{Name: WorkflowName})
	for name, fn := range map[string]any{ActDecide: f.Decide, ActBegin: f.Begin, ActTurn: f.Turn, ActSettle: f.Settle, ActNotify: f.Notify, ActAbandon: f.Abandon,
		ActTable: f.Table} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	if setup != nil {
		setup(env)
	}
	env.ExecuteWorkflow(WorkflowName, DebateInput{File: "/home/d.walkie.md"})
	if !env.IsWorkflowCompleted() {
		f.t.Fatal("the workflow did not complete")
	}
	return env
}

func (f *fakeHome) ended(env *testsuite.TestWorkflowEnvironment) Ended {
	f.t.Helper()
	if err := env.GetWorkflowError(); err != nil {
		f.t.Fatalf("workflow failed: %v\ncalls: %v", err, f.calls)
	}
	var e Ended
	if err := env.GetWorkflowResult(&e); err != nil {
		f.t.Fatal(err)
	}
	return e
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func TestDebateAsksTheHomeBeforeEveryTurnAndSettlesEachOnce(t *testing.T) {
	f := &fakeHome{t: t, goal: 4}
	e := f.ended(f.run(nil))
	if e.Action != string(controller.ActEnd) || e.Status != walkie.StatusConverged || e.Turns != 4 {
		t.Fatalf("ended %+v, want converged after 4 turns", e)
	}
	want := slices.Concat(slices.Repeat([]string{"decide", "begin", "turn", "settle", "notify"}, 4), []string{"decide"})
	if !slices.Equal(f.calls, want) {
		t.Fatalf("calls %v\nwant  %v", f.calls, want)
	}
	for i, in := range f.turnSeen {
		// The record comes from Begin, through the workflow, to the worker.
		if got, want := string(in.Record.Data), fmt.Sprintf("record before turn %d", i+1); got != want {
			t.Errorf("turn %d got record %q, want %q", i+1, got, want)
		}
		info := f.infos[i]
		if wantQ := "q-" + in.Participant; info.TaskQueue != wantQ || info.HeartbeatTimeout != 7*time.Second {
			t.Errorf("turn %d ran on %q with heartbeat timeout %s, want %q and 7s", i+1, info.TaskQueue, info.HeartbeatTimeout, wantQ)
		}
	}
	for _, s := range f.settles {
		if !s.Ref.Started.Equal(started) || s.File != "/home/d.walkie.md" {
			t.Errorf("settle %+v lacks the attempt's start or the file", s.Ref)
		}
	}
}

// walkie halt: the home signals, the workflow cancels the running turn,
// and the next decision (the home reads the halt from the state) ends the
// debate; the turn is not run again. On a server the worker's halted
// attempt comes back and is settled (WaitForCancellation; the scaleout
// tests check that); the SDK's test environment completes a cancelled
// activity at once instead, so here the attempt is abandoned.
func TestHaltCancelsTheRunningTurn(t *testing.T) {
	f := &fakeHome{t: t, goal: 4}
	done := make(chan struct{})
	defer close(done)
	f.turn = func(ctx context.Context, in TurnInput) (TurnResult, error) {
		if in.Turn < 2 {
			return acceptedResult(in), nil
		}
		select { // the test environment never cancels an activity's context
		case <-ctx.Done():
		case <-done:
		}
		return TurnResult{}, ctx.Err()
	}
	env := f.run(func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			f.mu.Lock()
			f.halted = true // what walkie halt writes, which the home's Decide reads
			f.mu.Unlock()
			env.SignalWorkflow(SignalHalt, nil)
		}, time.Second)
	})
	e := f.ended(env)
	if e.Status != walkie.StatusHalted {
		t.Fatalf("ended %+v, want halted", e)
	}
	if n := count(f.calls, "turn"); n != 2 {
		t.Fatalf("%d turn activities, want 2 (a halted turn is not run again): %v", n, f.calls)
	}
	if got := f.calls[len(f.calls)-3:]; !slices.Equal(got, []string{"turn", "abandon", "decide"}) {
		t.Fatalf("calls end %v, want the halted turn abandoned, then a decision", got)
	}
}

// auth and blocked-prompt are never retried (walkie.Outcome.Retryable):
// the worker fails the activity with the attempt in the details, the
// retry policy does not try again, and the home records the attempt.
func TestNonRetryableOutcomeIsSettledAndNotRetried(t *testing.T) {
	for _, out := range []walkie.Outcome{walkie.OutcomeAuth, walkie.OutcomeBlockedPrompt} {
		t.Run(string(out), func(t *testing.T) {
			f := &fakeHome{t: t, goal: 4}
			f.turn = func(_ context.Context, in TurnInput) (TurnResult, error) {
				r := TurnResult{Worker: "w", Session: engine.Result{Result: session.Result{Ending: session.EndBlocked, RuleOutcome: string(out)}}}
				return TurnResult{}, temporalsdk.NewApplicationErrorWithOptions("not logged in", string(out), temporalsdk.ApplicationErrorOptions{Details: []any{r}})
			}
			f.ended(f.run(nil))
			if n := count(f.calls, "turn"); n != 1 {
				t.Fatalf("%d turn activities, want 1: %s is never retried", n, out)
			}
			if len(f.settles) != 1 || f.settles[0].Result == nil || f.settles[0].Result.Session.RuleOutcome != string(out) {
				t.Fatalf("settled %+v, want the %s attempt", f.settles, out)
			}
		})
	}
}

// A worker that is lost before it reports (SIGKILL, a lost network) is
// retried by the retry policy, on whatever worker takes the task next;
// the home settles the one attempt that came back.
func TestLostWorkerIsRetriedAndTheTurnSettledOnce(t *testing.T) {
	f := &fakeHome{t: t, goal: 2}
	f.turn = func(ctx context.Context, in TurnInput) (TurnResult, error) {
		if in.Turn == 1 && activity.GetInfo(ctx).Attempt == 1 {
			return TurnResult{}, temporalsdk.NewHeartbeatTimeoutError()
		}
		return acceptedResult(in), nil
	}
	e := f.ended(f.run(nil))
	if e.Turns != 2 || count(f.calls, "turn") != 3 || len(f.settles) != 2 {
		t.Fatalf("ended %+v after calls %v, want 2 turns from 3 deliveries", e, f.calls)
	}
	if f.infos[1].Attempt != 2 {
		t.Fatalf("the retry ran as attempt %d, want 2", f.infos[1].Attempt)
	}
}

// When every delivery is lost, the attempt is recorded as lost (crashed),
// which counts against walkie's own retries.
func TestTurnLostOnEveryWorkerIsSettledAsLost(t *testing.T) {
	f := &fakeHome{t: t, goal: 1}
	f.turn = func(context.Context, TurnInput) (TurnResult, error) {
		return TurnResult{}, temporalsdk.NewHeartbeatTimeoutError()
	}
	f.ended(f.run(nil))
	if n := count(f.calls, "turn"); n < turnDeliveries {
		t.Fatalf("%d deliveries, want %d", n, turnDeliveries)
	}
	s := f.settles[0]
	if s.Result != nil || !strings.Contains(s.Lost, "no worker could deliver") || s.LostTimeout {
		t.Fatalf("settled %+v, want the attempt lost", s)
	}
}

// Bad input ends the run at once: a record that does not verify waits
// for a person, not for retries.
func TestBadInputFromTheHomeEndsTheRun(t *testing.T) {
	f := &fakeHome{t: t, goal: 2, decideErr: temporalsdk.NewNonRetryableApplicationError("d.walkie.md:12: the chain is broken", ErrTypeBadInput, nil)}
	env := f.run(nil)
	var app *temporalsdk.ApplicationError
	if err := env.GetWorkflowError(); !errors.As(err, &app) || app.Type() != ErrTypeBadInput {
		t.Fatalf("workflow error %v, want bad input", err)
	}
	if !slices.Equal(f.calls, []string{"decide"}) {
		t.Fatalf("calls %v, want one decide", f.calls)
	}
}

// A worker that cannot start the agent: the attempt is undone (no session
// ran, nothing is logged) and the run ends with the worker's error.
func TestBadInputOnTheWorkerAbandonsTheAttempt(t *testing.T) {
	f := &fakeHome{t: t, goal: 2}
	f.turn = func(context.Context, TurnInput) (TurnResult, error) {
		return TurnResult{}, temporalsdk.NewNonRetryableApplicationError("worker w: start alice: not found", ErrTypeBadInput, nil)
	}
	env := f.run(nil)
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("workflow error %v, want the worker's", err)
	}
	if want := []string{"decide", "begin", "turn", "abandon"}; !slices.Equal(f.calls, want) {
		t.Fatalf("calls %v, want %v", f.calls, want)
	}
}

// The record moved on between Decide and Begin: decide again.
func TestStaleBeginDecidesAgain(t *testing.T) {
	f := &fakeHome{t: t, goal: 1, stale: 1}
	f.ended(f.run(nil))
	if want := []string{"decide", "begin", "decide", "begin", "turn", "settle", "notify", "decide"}; !slices.Equal(f.calls, want) {
		t.Fatalf("calls %v, want %v", f.calls, want)
	}
}

// A long debate continues as new before its history grows past what a
// run should hold; nothing is carried over but the file's path.
func TestLongDebateContinuesAsNew(t *testing.T) {
	f := &fakeHome{t: t, goal: 1000}
	env := f.run(nil)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("workflow error %v, want continue-as-new", err)
	}
	if f.turns != maxTurnsPerRun {
		t.Fatalf("continued after %d turns, want %d", f.turns, maxTurnsPerRun)
	}
}

func TestFailedTurnSortsFailures(t *testing.T) {
	result := TurnResult{Worker: "w"}
	for _, tc := range []struct {
		name      string
		err       error
		nilResult bool
		wantErr   bool
		lost      bool
		timeout   bool
	}{
		{"an outcome with its attempt", temporalsdk.NewApplicationErrorWithOptions("x", "auth", temporalsdk.ApplicationErrorOptions{Details: []any{result}}), false, false, false, false},
		{"a halt before any worker took it", temporalsdk.NewCanceledError(), true, false, false, false},
		{"bad input", temporalsdk.NewNonRetryableApplicationError("x", ErrTypeBadInput, nil), true, true, false, false},
		{"too large", temporalsdk.NewNonRetryableApplicationError("x", ErrTypeTooLarge, nil), true, true, false, false},
		{"heartbeat timeout", temporalsdk.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil), false, false, true, false},
		{"start-to-close timeout", temporalsdk.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil), false, false, true, true},
		{"anything else", errors.New("connection reset"), false, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := failedTurn(tc.err)
			if (err != nil) != tc.wantErr || (s == nil) != tc.nilResult {
				t.Fatalf("failedTurn: %+v, %v", s, err)
			}
			if s == nil {
				return
			}
			if (s.Lost != "") != tc.lost || s.LostTimeout != tc.timeout || (s.Result != nil) == tc.lost {
				t.Fatalf("failedTurn: %+v", s)
			}
		})
	}
}

// The retry policy's non-retryable types are walkie's own rule.
func TestNonRetryableTypesFollowWalkiesRule(t *testing.T) {
	got := nonRetryable()
	for _, o := range walkie.Outcomes {
		if slices.Contains(got, string(o)) == o.Retryable() {
			t.Errorf("outcome %s: retryable %v, but listed as non-retryable: %v", o, o.Retryable(), slices.Contains(got, string(o)))
		}
	}
	if !slices.Contains(got, ErrTypeBadInput) {
		t.Error("bad input is retried")
	}
}

// A history recorded from a real run (the dev server, two workers, the
// fake agents: see the scaleout tests) replays against this workflow
// code without a non-determinism error. A change to the workflow that
// breaks running debates fails here.
func TestReplayRecordedHistory(t *testing.T) {
	// converge: a debate on two workers, recorded with protocol 1 (its
	// records are bytes, not Blobs); roundtable: a round table with its
	// phases, approvals and two rounds.
	for _, name := range []string{"converge", "roundtable"} {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(Debate, workflow.RegisterOptions{Name: WorkflowName})
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+name+".history.json"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// A round table's own step runs as one activity on the home's queue,
// heartbeating, for as long as its sessions take; then the workflow
// decides again.
func TestRoundTableStepRunsAtHome(t *testing.T) {
	f := &fakeHome{t: t, goal: 2, tableAt: 2}
	e := f.ended(f.run(nil))
	want := []string{"decide", "begin", "turn", "settle", "notify", "decide", "table", "decide", "begin", "turn", "settle", "notify", "decide"}
	if !slices.Equal(f.calls, want) {
		t.Fatalf("calls %v\nwant  %v", f.calls, want)
	}
	if e.Turns != 4 || len(f.tabled) != 1 || f.tabled[0].Ref.Turn != 2 || f.tabled[0].File != "/home/d.walkie.md" {
		t.Fatalf("ended %+v, tabled %+v", e, f.tabled)
	}
	info := f.infos[1]
	if info.HeartbeatTimeout != tableHeartbeatTimeout || info.TaskQueue == "q-bob" {
		t.Fatalf("the table step ran on %q with heartbeat timeout %s", info.TaskQueue, info.HeartbeatTimeout)
	}
}

// A round table's session: the worker's result, an outcome never retried
// with its attempt, a halt before any worker took it, workers lost, bad
// input.
func TestSessionWorkflowSaysHowTheSessionEnded(t *testing.T) {
	result := FileOutput{Worker: "w", Wrote: true}
	done := make(chan struct{})
	defer close(done)
	for _, tc := range []struct {
		name   string
		file   func(ctx context.Context, in FileInput) (FileOutput, error)
		halt   bool
		check  func(SessionOutput) bool
		failed bool
	}{
		{"a result", func(context.Context, FileInput) (FileOutput, error) { return result, nil },
			false, func(o SessionOutput) bool { return o.Result != nil && o.Result.Wrote }, false},
		{"auth, with its attempt", func(context.Context, FileInput) (FileOutput, error) {
			return FileOutput{}, temporalsdk.NewApplicationErrorWithOptions("no", "auth", temporalsdk.ApplicationErrorOptions{Details: []any{result}})
		}, false, func(o SessionOutput) bool { return o.Result != nil && o.Result.Worker == "w" }, false},
		{"lost", func(context.Context, FileInput) (FileOutput, error) {
			return FileOutput{}, temporalsdk.NewHeartbeatTimeoutError()
		},
			false, func(o SessionOutput) bool {
				return o.Result == nil && strings.Contains(o.Lost, "no worker could deliver")
			}, false},
		{"bad input", func(context.Context, FileInput) (FileOutput, error) {
			return FileOutput{}, temporalsdk.NewNonRetryableApplicationError("worker w: start cy: not found", ErrTypeBadInput, nil)
		}, false, nil, true},
		{"halted", func(ctx context.Context, _ FileInput) (FileOutput, error) {
			select { // the test environment never cancels an activity's context
			case <-ctx.Done():
			case <-done:
			}
			return FileOutput{}, ctx.Err()
		}, true, func(o SessionOutput) bool { return o.Halted && o.Result == nil }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			s.SetLogger(sdkLogger{zap.NewNop().Sugar()})
			env := s.NewTestWorkflowEnvironment()
			env.RegisterWorkflowWithOptions(Session, workflow.RegisterOptions{Name: SessionWorkflow})
			env.RegisterActivityWithOptions(tc.file, activity.RegisterOptions{Name: ActFile})
			if tc.halt {
				env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalHalt, nil) }, time.Second)
			}
			env.ExecuteWorkflow(SessionWorkflow, SessionInput{Queue: "q", StartToClose: time.Hour, Heartbeat: 5 * time.Second, File: FileInput{Role: "reviewer", Agent: "cy"}})
			err := env.GetWorkflowError()
			if tc.failed {
				if err == nil || !strings.Contains(err.Error(), "not found") {
					t.Fatalf("workflow error %v, want the worker's bad input", err)
				}
				return
			}
			var out SessionOutput
			if err != nil || env.GetWorkflowResult(&out) != nil || !tc.check(out) {
				t.Fatalf("ended %+v, %v", out, err)
			}
		})
	}
}
