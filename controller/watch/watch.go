// Package watch is the cron tick (`walkie watch --once`), for channels where
// some party is a live session or a person who answers the doorbell with
// `walkie post`: each tick looks at every debate once and invokes the next
// party only when controller.Next says it may run (it has a command, its
// debounce since the record last moved has passed, nobody else holds the
// debate), and it was not already invoked for this sequence number. A
// round table's next step runs whole: the implementer's turn, a phase, or
// a round's reviews at once. An
// invocation that did not move the record is retried once after
// RetryAfter; after another RetryAfter the supervisor is told, once per
// sequence number. The tick's memory is State.Watch in the log, never
// the walkie file.
package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/notify"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// Options configure one tick.
type Options struct {
	Path    string // a walkie file or a directory of them
	Config  *config.Config
	Log     *zap.Logger
	Observe func(controller.Event)
	// CopyEntries sends Observe an EventEntry for each new turn (the
	// supervisor's copy), tracked by State.HandledSeq.
	CopyEntries bool
	// RetryAfter is how long after an invocation the party is invoked once
	// more if the record has not moved, and then how long after the retry
	// the supervisor is told. 0 means the agent's debounce.
	RetryAfter time.Duration
	Now        func() time.Time // for tests; default time.Now
	// Registry is the machine's registry of debates the runs are noted in
	// (controller.Options.Registry); "" notes nothing.
	Registry string
	// TakeOver takes debates back from a remote engine's home that is
	// gone for good (controller.TakeOver); without it such a debate is
	// Refused.
	TakeOver bool
	// Held, when set, says why a session of an agent may not start now
	// (the machine's limits), or "": a held party is waiting, and its
	// invocation is not counted. Acquire takes the slot, without waiting.
	Held    func(agent string) string
	Acquire controller.AcquireFunc
}

// Result is what one tick did to one debate.
type Result struct {
	File   string `json:"file"`
	Debate string `json:"debate,omitempty"`
	// Action is one of invoked, retried, escalated, waiting, skipped,
	// ended, refused (a remote engine's home runs it) or error.
	Action string `json:"action"`
	Detail string `json:"detail"`
	Status string `json:"status,omitempty"` // the debate's status after the tick
}

// The tick's actions.
const (
	Invoked   = "invoked"
	Retried   = "retried"
	Escalated = "escalated"
	Waiting   = "waiting"
	Skipped   = "skipped"
	Ended     = "ended"
	Refused   = "refused"
	Error     = "error"
)

// Once is one tick over every debate at o.Path.
func Once(ctx context.Context, o Options) ([]Result, error) {
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	files, err := walkie.Find(o.Path)
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		r := Result{File: f, Action: Skipped, Detail: "not the open thread of its channel (walkie status " + filepath.Dir(f) + ")"}
		// A channel's threads wait their turn: only the open one is acted
		// on (docs/review-threads.md).
		if walkie.ActsOn(f) {
			r = one(ctx, o, f)
		}
		lvl := o.Log.Info
		if r.Action == Waiting || r.Action == Skipped || r.Action == Ended {
			lvl = o.Log.Debug
		}
		lvl("watch", zap.String("file", f), zap.String("action", r.Action), zap.String("detail", r.Detail))
		out = append(out, r)
	}
	return out, ctx.Err()
}

// one is the tick for one debate: look, then at most one action.
func one(ctx context.Context, o Options, file string) Result {
	r := Result{File: file}
	fail := func(err error) Result {
		r.Action, r.Detail = Error, err.Error()
		if he := (*controller.HomedError)(nil); errors.As(err, &he) {
			r.Action = Refused // marked by a home since the look below
		}
		return r
	}
	// A debate a remote engine's home runs is the home's: its running
	// attempt is out on a worker, not a dead controller's.
	homed := controller.Homed(file)
	var he *controller.HomedError
	switch {
	case errors.As(homed, &he) && !o.TakeOver:
		r.Debate, r.Action, r.Detail = he.ID, Refused, homed.Error()
		return r
	case he != nil:
		if err := controller.TakeOver(controller.Options{File: file, Config: o.Config, Log: o.Log}); err != nil {
			return fail(err)
		}
	case homed != nil:
		return fail(homed)
	}
	// An attempt a dead controller left running is finished first, even
	// when no turn follows it (it ended the debate, or the next party is a
	// person).
	if _, err := controller.Recover(controller.Options{File: file, Config: o.Config, Log: o.Log}); err != nil {
		return fail(err)
	}
	d, err := walkie.Load(file)
	if err != nil {
		return fail(err)
	}
	r.Debate = d.Meta.ID
	dir := walkie.StateDir(file, d.Meta.ID)
	emit := func(e controller.Event) {
		if o.Observe != nil {
			e.File, e.Debate = file, d.Meta.ID
			o.Observe(e)
		}
	}
	if o.Observe != nil && notify.CopyWanted(file, o.CopyEntries) {
		if _, err := notify.CopyEntries(file, emit); err != nil {
			o.Log.Warn("copy of new entries for the supervisor failed", zap.String("file", file), zap.Error(err))
		}
	}
	st, err := walkie.LoadState(dir)
	if err != nil {
		return fail(err)
	}
	at, err := controller.ReadStanding(d, controller.StandingOptions{Config: o.Config, Now: o.Now(), Debounce: true, LastMove: lastMove(file, d)})
	if err != nil {
		return fail(err)
	}
	dec := at.Decision
	r.Status = at.Status
	waits, err := tableWaits(file, &d.Meta)
	if err != nil {
		return fail(err)
	}
	switch {
	case dec.Action == controller.ActEnd && !dec.Record:
		r.Action, r.Detail = Ended, "the debate is "+dec.Status
		return r
	case d.Meta.BriefingSHA256 == "":
		r.Action, r.Detail = Skipped, "the briefing is not approved"
		return r
	case waits != "" && dec.Action == controller.ActRun:
		r.Action, r.Detail = Waiting, waits
		return r
	case dec.Action == controller.ActWait, dec.Action == controller.ActDebounce:
		r.Action, r.Detail = Waiting, at.Waiting
		return r
	case dec.Action == controller.ActHeld:
		r.Action, r.Detail = Skipped, "a controller is running this debate now"
		return r
	}
	// ActRun, or an end the loop must record (the budget is spent): both
	// are the loop's to do.
	return invoke(ctx, o, file, d, st, dec, emit)
}

// invoke runs the next party's turn, once per sequence number, with one
// timed retry, then escalates to the supervisor.
func invoke(ctx context.Context, o Options, file string, d *walkie.Doc, st *walkie.State, dec controller.Decision, emit func(controller.Event)) Result {
	r := Result{File: file, Debate: d.Meta.ID, Status: dec.Status}
	p := d.Progress()
	now := o.Now()
	retryAfter := o.RetryAfter
	if retryAfter <= 0 {
		retryAfter = dec.Agent.Debounce
	}
	if o.Held != nil && dec.Action == controller.ActRun {
		if why := o.Held(dec.Agent.Name); why != "" {
			r.Action, r.Detail = Waiting, why
			return r
		}
	}
	w := st.Watch
	tries, first := 1, now.UTC()
	if w != nil && w.InvokedSeq == p.Seq && !dec.Record {
		if due := w.InvokedAt.Add(retryAfter); now.Before(due) {
			r.Action, r.Detail = Waiting, fmt.Sprintf("%s was invoked for seq %d at %s; next step after %s", p.NextAgent, p.Seq,
				w.InvokedAt.Local().Format(time.TimeOnly), due.Local().Format(time.TimeOnly))
			return r
		}
		switch {
		case w.Escalated:
			r.Action, r.Detail = Waiting, fmt.Sprintf("escalated for seq %d; waiting for the supervisor", p.Seq)
			return r
		case w.Tries >= 2:
			return escalate(o, file, d, p, w, emit, r)
		}
		tries = w.Tries + 1
		first = w.FirstAt
		if first.IsZero() {
			first = w.InvokedAt // the first invocation, until this retry
		}
	}
	// Remember the invocation before making it: a tick killed mid-turn
	// must not make the next tick think the party was never invoked.
	_, _, err := walkie.UpdateState(file, walkie.OpWatch, func(_ *walkie.Meta, cur walkie.Progress, s *walkie.State) error {
		if cur.Seq != p.Seq {
			return errMoved
		}
		s.Watch = &walkie.WatchMemory{InvokedSeq: p.Seq, InvokedAt: now.UTC(), FirstAt: first, Tries: tries}
		return nil
	})
	if errors.Is(err, errMoved) {
		r.Action, r.Detail = Skipped, "the record moved while the tick looked at it"
		return r
	}
	if err != nil {
		r.Action, r.Detail = Error, err.Error()
		return r
	}
	r.Action = Invoked
	if tries > 1 {
		r.Action = Retried
	}
	// One attempt, never the controller's own retry: the tick retries once,
	// after RetryAfter, then tells the supervisor.
	sum, err := controller.Run(ctx, controller.Options{File: file, Config: o.Config, Once: true, NoRetry: true, Log: o.Log, Observe: o.Observe, Acquire: o.Acquire,
		Registry: o.Registry, By: "walkie watch"})
	r.Status = sum.Status
	switch {
	case errors.Is(err, walkie.ErrLocked):
		r.Detail = fmt.Sprintf("%s: another controller took the debate first", p.NextAgent)
	case err != nil:
		r.Detail = fmt.Sprintf("%s for turn %d: %v", p.NextAgent, p.NextTurn, err)
	case sum.Turns > p.Turns:
		r.Detail = fmt.Sprintf("%s wrote turn %d; the debate is %s", p.NextAgent, p.NextTurn, sum.Status)
	case sum.Interrupted:
		r.Detail = fmt.Sprintf("%s for turn %d: interrupted", p.NextAgent, p.NextTurn)
	default:
		r.Detail = fmt.Sprintf("%s did not write turn %d; the debate is %s", p.NextAgent, p.NextTurn, sum.Status)
		if n := len(sum.Attempts); n > 0 {
			last := sum.Attempts[n-1]
			r.Detail += fmt.Sprintf(" (last attempt: %s, %s)", last.Outcome, last.Detail)
		}
	}
	return r
}

var errMoved = errors.New("the record moved")

// tableWaits says why a round table's next step waits for a person, ""
// when it does not. A tick runs a round table's next step whole, as
// walkie turn does (the implementer's turn, a phase, or a round's reviews
// all at once, sealed from each other), never one reviewer apart from
// the rest; a phase whose file awaits approval is a person's to approve.
func tableWaits(file string, m *walkie.Meta) (string, error) {
	if !m.IsRoundtable() || len(m.Phases) == 0 {
		return "", nil
	}
	phases, err := roundtable.ListPhases(file)
	if err != nil {
		return "", err
	}
	for _, p := range phases {
		if p.State == roundtable.PhaseWritten {
			return fmt.Sprintf("the %s phase's file by %s awaits approval: read it (walkie phase show %s %s), then walkie phase approve %s %s",
				p.Phase, p.Agent, file, p.Phase, file, p.Phase), nil
		}
	}
	return "", nil
}

// escalate tells the supervisor, once per sequence number.
func escalate(o Options, file string, d *walkie.Doc, p walkie.Progress, w *walkie.WatchMemory, emit func(controller.Event), r Result) Result {
	when := "last at " + w.InvokedAt.Local().Format(time.DateTime)
	if !w.FirstAt.IsZero() && !w.FirstAt.Equal(w.InvokedAt) {
		when = "first at " + w.FirstAt.Local().Format(time.DateTime) + ", " + when
	}
	reason := fmt.Sprintf("%s was invoked %d times for turn %d (seq %d, %s) and the record has not moved",
		p.NextAgent, w.Tries, p.NextTurn, p.Seq, when)
	// Record first: the supervisor is told at most once, even if this
	// tick dies right after.
	_, _, err := walkie.UpdateState(file, walkie.OpWatch, func(_ *walkie.Meta, cur walkie.Progress, s *walkie.State) error {
		if cur.Seq != p.Seq || s.Watch == nil || s.Watch.Escalated {
			return errMoved
		}
		s.Watch.Escalated = true
		return nil
	})
	if errors.Is(err, errMoved) {
		r.Action, r.Detail = Skipped, "the record moved while the tick looked at it"
		return r
	}
	if err != nil {
		r.Action, r.Detail = Error, err.Error()
		return r
	}
	emit(controller.Event{Kind: controller.EventEscalation, Turn: p.NextTurn, Round: p.NextRound, Agent: p.NextAgent, Line: reason})
	o.Log.Warn("escalated to the supervisor", zap.String("file", file), zap.String("debate", d.Meta.ID), zap.String("reason", reason))
	r.Action, r.Detail = Escalated, reason
	return r
}

// lastMove is when the record last moved: the last entry's stamp, or the
// file's modification time when it has no entries yet.
func lastMove(file string, d *walkie.Doc) time.Time {
	if n := len(d.Entries); n > 0 {
		return d.Entries[n-1].Marker.At
	}
	if fi, err := os.Stat(file); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}
