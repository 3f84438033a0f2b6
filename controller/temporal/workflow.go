package temporal

import (
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/walkie-sh/walkie/controller"
)

// maxTurnsPerRun bounds one workflow run's history: each turn carries the
// record twice (the input and the agent's version), so after this many
// the workflow continues as new, with nothing to carry over.
const maxTurnsPerRun = 20

// Retry of one delivery of a turn: a worker that is lost (it stops
// heartbeating) or fails before the session ran. An attempt whose session
// ran is recorded, whatever its outcome, and walkie's own retries decide.
const (
	turnDeliveries = 3
	homeTimeout    = 30 * time.Second
)

// homeOptions run the activities that touch the files as local
// activities: the workflow's worker is the home's (its task queue is the
// home's alone), so they run in the home process inside the workflow task,
// with no task of their own to schedule and poll. That keeps a turn's
// bookkeeping to one round trip through the server, not five. A home that
// is down is waited for; one that dies inside them runs them again when
// it is back (each is idempotent).
var homeOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: homeTimeout,
	RetryPolicy: &temporalsdk.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
		NonRetryableErrorTypes: []string{ErrTypeBadInput, ErrTypeTooLarge}},
}

// Debate is the workflow of one debate. It is deterministic and
// level-based: each pass asks the home what should happen now (Decide),
// and only for a turn to run does it begin the attempt, run it on the
// agent's task queue and have the home settle and announce it. Everything
// it knows of the debate an activity returned in this pass; the record
// stays on the home machine. It returns when the debate has ended or
// cannot go on until something changes; the home starts it again then.
func Debate(ctx workflow.Context, in DebateInput) (Ended, error) {
	halts := workflow.GetSignalChannel(ctx, SignalHalt)
	wakes := []workflow.ReceiveChannel{workflow.GetSignalChannel(ctx, SignalWake), workflow.GetSignalChannel(ctx, SignalExtend)}
	home := workflow.WithLocalActivityOptions(ctx, homeOptions)
	var out Ended
	for {
		// A wake-up only says "look again", which this pass does: the
		// signals so far are spent.
		for _, c := range wakes {
			drain(c)
		}
		var p Plan
		if err := workflow.ExecuteLocalActivity(home, ActDecide, in).Get(ctx, &p); err != nil {
			return out, err
		}
		if p.Action != string(controller.ActRun) {
			// Wake-ups that came during the decision are answered by it.
			for _, c := range wakes {
				drain(c)
			}
			out.Action, out.Status, out.Why = p.Action, p.Status, p.Why
			return out, nil
		}
		if p.Table {
			// A round table's own step, at home; its sessions are
			// workflows of their own.
			var t Tabled
			if err := workflow.ExecuteActivity(tableContext(ctx), ActTable, TableInput{File: in.File, Ref: p.Ref}).Get(ctx, &t); err != nil {
				return out, err
			}
			out.Turns += t.Attempts
			continue
		}
		var b Began
		if err := workflow.ExecuteLocalActivity(home, ActBegin, BeginInput{File: in.File, Ref: p.Ref, Implementer: p.Turn.Implementer != nil}).Get(ctx, &b); err != nil {
			return out, err
		}
		if b.Stale {
			continue
		}
		p.Ref.Started = b.Started
		settle, err := runTurn(ctx, p, b, halts)
		if err != nil {
			// No session ran and none can until something changes: the
			// attempt is undone, and the error ends the run for the home
			// to show.
			ab := AbandonInput{File: in.File, Ref: p.Ref, Cause: err.Error()}
			if aerr := workflow.ExecuteLocalActivity(home, ActAbandon, ab).Get(ctx, nil); aerr != nil {
				return out, aerr
			}
			return out, err
		}
		if settle == nil {
			// Halted before any worker took the turn.
			if err := workflow.ExecuteLocalActivity(home, ActAbandon, AbandonInput{File: in.File, Ref: p.Ref, Cause: "halted"}).Get(ctx, nil); err != nil {
				return out, err
			}
			continue
		}
		settle.File, settle.Ref, settle.At = in.File, p.Ref, workflow.Now(ctx)
		var s Settled
		if err := workflow.ExecuteLocalActivity(home, ActSettle, *settle).Get(ctx, &s); err != nil {
			if isBadInput(err) {
				// The result cannot be recorded (a worker of another
				// version sent it): the attempt is undone, and the run
				// ends with why.
				ab := AbandonInput{File: in.File, Ref: p.Ref, Cause: err.Error()}
				if aerr := workflow.ExecuteLocalActivity(home, ActAbandon, ab).Get(ctx, nil); aerr != nil {
					return out, aerr
				}
			}
			return out, err
		}
		if !s.Stale {
			out.Turns++
			if err := workflow.ExecuteLocalActivity(home, ActNotify, NotifyInput{File: in.File, Record: s.Record}).Get(ctx, nil); err != nil {
				return out, err
			}
		}
		if out.Turns >= maxTurnsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			return out, workflow.NewContinueAsNewError(ctx, WorkflowName, in)
		}
	}
}

// runTurn runs the turn activity on the agent's queue and says what to
// settle: the worker's result, or why no result came. A halt signal
// cancels the activity, and the worker answers with the halted attempt.
// It returns nil, nil when the halt came before any worker took the turn,
// and an error when the turn cannot run until something changes.
func runTurn(ctx workflow.Context, p Plan, b Began, halts workflow.ReceiveChannel) (*SettleInput, error) {
	in := p.Turn
	in.Record, in.Worktree = b.Record, b.Worktree
	if in.Implementer != nil && b.Implementer != nil {
		it := *in.Implementer
		it.Files = *b.Implementer
		in.Implementer = &it
	}
	f := sessionActivity(ctx, halts, ActTurn, in, p.Queue, p.StartToClose, p.Heartbeat,
		fmt.Sprintf("turn %d · %s, attempt %d", p.Ref.Turn, p.Ref.Participant, p.Ref.Attempt))
	// Halts that came while the turn ran are spent: the next Decide reads
	// the halt from the state.
	drain(halts)
	var r TurnResult
	err := f.Get(ctx, &r)
	if err == nil {
		return &SettleInput{Result: &r}, nil
	}
	return failedTurn(err)
}

// failedTurn sorts a turn activity's failure: an outcome that is never
// retried carries the attempt's result (it is settled like any other), a
// cancel before any session ran is a halt with nothing to record, bad
// input ends the run, and anything else means the workers were lost.
func failedTurn(err error) (*SettleInput, error) {
	var app *temporalsdk.ApplicationError
	if errors.As(err, &app) && app.HasDetails() {
		var r TurnResult
		if derr := app.Details(&r); derr == nil {
			return &SettleInput{Result: &r}, nil
		}
	}
	var cancelled *temporalsdk.CanceledError
	if errors.As(err, &cancelled) {
		return nil, nil
	}
	if isBadInput(err) {
		return nil, err
	}
	var timeout *temporalsdk.TimeoutError
	if errors.As(err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_START_TO_CLOSE {
		return &SettleInput{Lost: "the worker did not report within the turn's start-to-close timeout: " + err.Error(), LostTimeout: true}, nil
	}
	return &SettleInput{Lost: fmt.Sprintf("no worker could deliver the turn in %d tries: %v", turnDeliveries, err)}, nil
}

// sessionActivity runs an activity that runs an agent's session on its
// queue (a turn, a round table's file attempt) and waits for it to end: a
// lost worker's delivery is retried on another, up to turnDeliveries; an
// outcome walkie never retries is not; a halt signal cancels it, and the
// worker ends the session and answers with the halted attempt, which is
// waited for rather than dropped. The future it returns is done.
func sessionActivity(ctx workflow.Context, halts workflow.ReceiveChannel, name string, in any, queue string, startToClose, heartbeat time.Duration, summary string) workflow.Future {
	actx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{
		TaskQueue:           queue,
		StartToCloseTimeout: startToClose,
		HeartbeatTimeout:    heartbeat,
		WaitForCancellation: true,
		RetryPolicy: &temporalsdk.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			MaximumAttempts: turnDeliveries, NonRetryableErrorTypes: nonRetryable()},
		Summary: summary,
	})
	f := workflow.ExecuteActivity(actx, name, in)
	done := false
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(f, func(workflow.Future) { done = true })
	sel.AddReceive(halts, func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		cancel()
	})
	for !done {
		sel.Select(ctx)
	}
	return f
}

// drain takes every signal waiting on c.
func drain(c workflow.ReceiveChannel) {
	for c.ReceiveAsync(nil) {
	}
}

// isBadInput reports whether err is one no retry fixes until something
// changes.
func isBadInput(err error) bool {
	var app *temporalsdk.ApplicationError
	return errors.As(err, &app) && (app.Type() == ErrTypeBadInput || app.Type() == ErrTypeTooLarge)
}

// tableContext runs a round table's own step on the home's task queue (the
// workflow's own): a regular activity, not a local one, since it waits
// for sessions and the grader for as long as they take, heartbeating; a
// home that dies inside it runs it again once it is back.
func tableContext(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 7 * 24 * time.Hour,
		HeartbeatTimeout:    tableHeartbeatTimeout,
		RetryPolicy: &temporalsdk.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second,
			NonRetryableErrorTypes: []string{ErrTypeBadInput, ErrTypeTooLarge}},
		Summary: "round table step",
	})
}

// Session is the workflow of one of a round table's own sessions: its
// file attempt on the agent's task queue, with a turn's timeouts, retries
// of delivery and halt, and how it ended. The home waits for it; a home
// that died meanwhile finds it again by its id.
func Session(ctx workflow.Context, in SessionInput) (SessionOutput, error) {
	halts := workflow.GetSignalChannel(ctx, SignalHalt)
	f := sessionActivity(ctx, halts, ActFile, in.File, in.Queue, in.StartToClose, in.Heartbeat,
		fmt.Sprintf("%s · %s, attempt %d", in.File.Role, in.File.Agent, in.File.Attempt))
	var r FileOutput
	err := f.Get(ctx, &r)
	out := SessionOutput{At: workflow.Now(ctx)}
	if err == nil {
		out.Result = &r
		return out, nil
	}
	var app *temporalsdk.ApplicationError
	if errors.As(err, &app) && app.HasDetails() && app.Details(&r) == nil {
		out.Result = &r // an outcome never retried, with its attempt
		return out, nil
	}
	var cancelled *temporalsdk.CanceledError
	switch {
	case errors.As(err, &cancelled):
		out.Halted = true
	case isBadInput(err):
		return out, err
	default:
		s, _ := failedTurn(err)
		out.Lost, out.LostTimeout = s.Lost, s.LostTimeout
	}
	return out, nil
}
