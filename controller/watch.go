package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// Event kinds of the cron tick and of the supervisor's copies; the other
// kinds are in events.go.
const (
	// EventEscalation: the supervisor must look (an invoked party did not
	// answer after its retry). Line says why.
	EventEscalation EventKind = "escalation"
	// EventEntry: a copy of a recorded entry for the supervisor. Line is
	// the entry's body, Started its time; Turn is 0 for supervisor notes.
	EventEntry EventKind = "entry"
)

// FileSuffix ends every walkie file's name.
const FileSuffix = ".walkie.md"

// FindDebates returns the walkie files at path: path itself if it is a
// file, else every *.walkie.md under it, skipping .git, node_modules and
// walkie's own .walkie state directories. The result is sorted.
func FindDebates(path string) ([]string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{abs}, nil
	}
	var out []string
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == abs {
				return err
			}
			return nil // a directory vanished or is unreadable: not ours to judge
		}
		if d.IsDir() {
			if p != abs && SkipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), FileSuffix) && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// SkipDir reports whether a directory of this name is never searched for
// walkie files.
func SkipDir(name string) bool {
	return name == ".walkie" || name == ".git" || name == "node_modules"
}

// WatchOptions configure one cron tick.
type WatchOptions struct {
	Path    string // a walkie file or a directory of them
	Config  *config.Config
	Log     *zap.Logger
	Observe func(Event)
	// CopyEntries sends Observe an EventEntry for each new turn (the
	// supervisor's copy), tracked by State.HandledSeq.
	CopyEntries bool
	// RetryAfter is how long after an invocation the party is invoked once
	// more if the record has not moved, and then how long after the retry
	// the supervisor is told. 0 means the agent's debounce.
	RetryAfter time.Duration
	Now        func() time.Time // for tests; default time.Now
}

// WatchResult is what one tick did to one debate.
type WatchResult struct {
	File   string `json:"file"`
	Debate string `json:"debate,omitempty"`
	// Action is one of invoked, retried, escalated, waiting, skipped,
	// ended or error.
	Action string `json:"action"`
	Detail string `json:"detail"`
	Status string `json:"status,omitempty"` // the debate's status after the tick
}

// Watch actions.
const (
	WatchInvoked   = "invoked"
	WatchRetried   = "retried"
	WatchEscalated = "escalated"
	WatchWaiting   = "waiting"
	WatchSkipped   = "skipped"
	WatchEnded     = "ended"
	WatchError     = "error"
)

// WatchOnce is one tick for cron, for channels where some party is a live
// session or a person who answers the doorbell with `walkie post`. For
// each debate it invokes the next party (runs one turn, with Once) only
// if the party has a command, it is its turn, its debounce since the last
// entry has passed (a live session may be about to answer), and it was
// not already invoked for this sequence number. An invocation that did
// not move the record is retried once after RetryAfter; after another
// RetryAfter the supervisor is told (EventEscalation), once per sequence
// number. The tick's memory is State.Watch in state.json, never the
// walkie file.
func WatchOnce(ctx context.Context, o WatchOptions) ([]WatchResult, error) {
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	files, err := FindDebates(o.Path)
	if err != nil {
		return nil, err
	}
	var out []WatchResult
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		r := watchOne(ctx, o, f)
		lvl := o.Log.Info
		if r.Action == WatchWaiting || r.Action == WatchSkipped || r.Action == WatchEnded {
			lvl = o.Log.Debug
		}
		lvl("watch", zap.String("file", f), zap.String("action", r.Action), zap.String("detail", r.Detail))
		out = append(out, r)
	}
	return out, ctx.Err()
}

func watchOne(ctx context.Context, o WatchOptions, file string) WatchResult {
	r := WatchResult{File: file}
	fail := func(err error) WatchResult { r.Action, r.Detail = WatchError, err.Error(); return r }
	d, err := walkie.Load(file)
	if err != nil {
		return fail(err)
	}
	r.Debate = d.Meta.ID
	dir := walkie.StateDir(file, d.Meta.ID)
	emit := func(e Event) {
		if o.Observe != nil {
			e.File, e.Debate = file, d.Meta.ID
			o.Observe(e)
		}
	}
	if o.Observe != nil && CopyWanted(file, o.CopyEntries) {
		if _, err := CopyEntries(file, emit); err != nil {
			o.Log.Warn("copy of new entries for the supervisor failed", zap.String("file", file), zap.Error(err))
		}
	}
	st, err := walkie.LoadState(dir)
	if err != nil {
		return fail(err)
	}
	p := d.Progress()
	r.Status = walkie.DebateStatus(&d.Meta, p, st)
	switch {
	case r.Status != walkie.StatusOpen:
		r.Action, r.Detail = WatchEnded, "the debate is "+r.Status
		return r
	case d.Meta.BriefingSHA256 == "":
		r.Action, r.Detail = WatchSkipped, "the briefing is not approved"
		return r
	case d.Meta.IsRoundtable():
		// A round is one implementer turn and parallel reviews judged
		// together; one party at a time would break its sealing.
		r.Action, r.Detail = WatchSkipped, "a round table runs whole rounds: use walkie auto or walkie serve"
		return r
	}
	agent, err := o.Config.Agent(p.NextAgent)
	if err != nil {
		r.Action, r.Detail = WatchWaiting, fmt.Sprintf("turn %d is %s's, who has no command here; waiting for walkie post", p.NextTurn, p.NextAgent)
		return r
	}
	if walkie.ControllerRunning(dir) {
		r.Action, r.Detail = WatchSkipped, "a controller is running this debate now"
		return r
	}
	now := o.Now()
	last := lastEntryTime(file, d)
	if due := last.Add(agent.Debounce); now.Before(due) {
		r.Action, r.Detail = WatchWaiting, fmt.Sprintf("debounce: %s may still answer by itself; invoking it after %s", p.NextAgent, due.Local().Format(time.TimeOnly))
		return r
	}
	retryAfter := o.RetryAfter
	if retryAfter <= 0 {
		retryAfter = agent.Debounce
	}
	w := st.Watch
	tries := 1
	if w != nil && w.InvokedSeq == p.Seq {
		if due := w.InvokedAt.Add(retryAfter); now.Before(due) {
			r.Action, r.Detail = WatchWaiting, fmt.Sprintf("%s was invoked for seq %d at %s; next step after %s", p.NextAgent, p.Seq,
				w.InvokedAt.Local().Format(time.TimeOnly), due.Local().Format(time.TimeOnly))
			return r
		}
		switch {
		case w.Escalated:
			r.Action, r.Detail = WatchWaiting, fmt.Sprintf("escalated for seq %d; waiting for the supervisor", p.Seq)
			return r
		case w.Tries >= 2:
			return escalate(o, file, d, p, w, emit, r)
		}
		tries = w.Tries + 1
	}
	// Remember the invocation before making it: a tick killed mid-turn
	// must not make the next tick think the party was never invoked.
	_, _, err = walkie.UpdateState(file, func(_ *walkie.Meta, cur walkie.Progress, s *walkie.State) error {
		if cur.Seq != p.Seq {
			return errMoved
		}
		s.Watch = &walkie.WatchMemory{InvokedSeq: p.Seq, InvokedAt: now.UTC(), Tries: tries}
		return nil
	})
	if errors.Is(err, errMoved) {
		r.Action, r.Detail = WatchSkipped, "the record moved while the tick looked at it"
		return r
	}
	if err != nil {
		return fail(err)
	}
	r.Action = WatchInvoked
	if tries > 1 {
		r.Action = WatchRetried
	}
	sum, err := Run(ctx, Options{File: file, Config: o.Config, Once: true, Log: o.Log, Observe: o.Observe})
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

// escalate tells the supervisor, once per sequence number.
func escalate(o WatchOptions, file string, d *walkie.Doc, p walkie.Progress, w *walkie.WatchMemory, emit func(Event), r WatchResult) WatchResult {
	reason := fmt.Sprintf("%s was invoked %d times for turn %d (seq %d, first at %s) and the record has not moved",
		p.NextAgent, w.Tries, p.NextTurn, p.Seq, w.InvokedAt.Local().Format(time.DateTime))
	// Record first: the supervisor is told at most once, even if this
	// tick dies right after.
	_, _, err := walkie.UpdateState(file, func(_ *walkie.Meta, cur walkie.Progress, s *walkie.State) error {
		if cur.Seq != p.Seq || s.Watch == nil || s.Watch.Escalated {
			return errMoved
		}
		s.Watch.Escalated = true
		return nil
	})
	if errors.Is(err, errMoved) {
		r.Action, r.Detail = WatchSkipped, "the record moved while the tick looked at it"
		return r
	}
	if err != nil {
		r.Action, r.Detail = WatchError, err.Error()
		return r
	}
	emit(Event{Kind: EventEscalation, Turn: p.NextTurn, Round: p.NextRound, Agent: p.NextAgent, Line: reason})
	o.Log.Warn("escalated to the supervisor", zap.String("file", file), zap.String("debate", d.Meta.ID), zap.String("reason", reason))
	r.Action, r.Detail = WatchEscalated, reason
	return r
}

// lastEntryTime is when the record last moved: the last entry's stamp,
// or the file's modification time when it has no entries yet.
func lastEntryTime(file string, d *walkie.Doc) time.Time {
	if n := len(d.Entries); n > 0 {
		return d.Entries[n-1].Marker.At
	}
	if fi, err := os.Stat(file); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}

// CopyWanted reports whether the supervisor gets a copy of file's entries:
// the debate's own switch (walkie notify --copy) if it has one, else dflt,
// the config's notify.copy_supervisor.
func CopyWanted(file string, dflt bool) bool {
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return dflt
	}
	st, err := walkie.LoadState(walkie.StateDir(file, meta.ID))
	if err != nil || st.CopySupervisor == nil {
		return dflt
	}
	return *st.CopySupervisor
}

// copyBacklog bounds how many entries one call copies: switching the copy
// on for a long debate sends its latest entries, not its history.
const copyBacklog = 10

// CopyEntries emits an EventEntry for every turn recorded after the
// state's HandledSeq and moves HandledSeq to the last entry. HandledSeq
// moves first, under the record lock, so two copiers (a daemon and a cron
// tick) never both send an entry, and a crash loses a copy rather than
// sending it twice. Supervisor notes are not copied to the supervisor.
func CopyEntries(file string, emit func(Event)) (int, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return 0, err
	}
	p := d.Progress()
	var from int
	_, _, err = walkie.UpdateState(file, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
		if s.HandledSeq >= p.Seq {
			return errMoved
		}
		from, s.HandledSeq = s.HandledSeq, p.Seq
		return nil
	})
	if errors.Is(err, errMoved) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var entries []walkie.Entry
	for _, e := range d.Entries {
		if e.Marker.Seq > from && e.Kind == walkie.KindTurn {
			entries = append(entries, e)
		}
	}
	if len(entries) > copyBacklog {
		entries = entries[len(entries)-copyBacklog:]
	}
	for _, e := range entries {
		emit(Event{Kind: EventEntry, Debate: d.Meta.ID, File: file, Turn: e.Turn, Round: d.Meta.RoundOf(e.Turn), Agent: e.Agent,
			Started: e.Marker.At, Line: string(e.Body)})
	}
	return len(entries), nil
}
