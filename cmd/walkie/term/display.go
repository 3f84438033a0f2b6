package term

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// StartedLine is "turn 3 · codex (round 2, attempt 1)".
func StartedLine(e controller.Event, pal Palette) string {
	if e.Turn == 0 && e.Line != "" { // a round table's phase names itself
		return fmt.Sprintf("%s · %s (attempt %d)", Clean(e.Line), pal.Bold(Clean(e.Agent)), e.Attempt)
	}
	return fmt.Sprintf("turn %d · %s (round %d, attempt %d)", e.Turn, pal.Bold(Clean(e.Agent)), e.Round, e.Attempt)
}

// recordedLine is one attempt as it ended: "turn 3 · codex accepted in
// 1.5s · signed · $0.0042 · turn recorded".
func recordedLine(r *controller.TurnRecord, pal Palette) string {
	what := fmt.Sprintf("turn %d", r.Turn)
	if r.Turn == 0 && r.Role != "" { // a round table's phase
		what = r.Role
	}
	parts := []string{fmt.Sprintf("%s · %s %s in %s", Clean(what), pal.Bold(Clean(r.Agent)), pal.Outcome(r.Outcome),
		Duration(time.Duration(r.DurationMS)*time.Millisecond))}
	if r.Signed {
		parts = append(parts, pal.Green("signed"))
	}
	if cost := CostCell(r.Usage); cost != "?" {
		parts = append(parts, cost)
	}
	if r.Detail != "" {
		parts = append(parts, Clean(r.Detail))
	}
	return strings.Join(parts, " · ")
}

// endedLine is how the run ended, as the last progress line.
func endedLine(e controller.Event, pal Palette) string {
	line := Clean(e.Line)
	if e.Status == walkie.StatusClosed {
		return "thread " + pal.Status(e.Status) + " " + line
	}
	if e.Status == walkie.StatusConverged {
		s := "debate " + pal.Status(e.Status)
		if line != "" {
			s += ": " + line
		}
		return s
	}
	// "stopped: max-rounds (reached its round cap of 6)", as the error
	// says it, never "debate max-rounds".
	return strings.Replace(EndLine(e.Status, line), e.Status, pal.Status(e.Status), 1)
}

// EndLine says how a debate or round table ended, in the words the live
// display and the error use: "stopped: max-rounds (reached its round cap
// of 6)". The status is the name status, report and the exit codes use.
func EndLine(status, reason string) string {
	s := "stopped: " + status
	if status == walkie.StatusConverged || status == walkie.StatusClosed {
		s = status
	}
	if reason != "" {
		s += " (" + reason + ")"
	}
	return s
}

// Progress prints one readable line per event where there is no
// terminal to redraw: a pipe, a CI log, `make demo > out`.
type Progress struct {
	mu  sync.Mutex
	w   io.Writer
	pal Palette
}

// NewProgress prints progress lines on w.
func NewProgress(w io.Writer, pal Palette) *Progress { return &Progress{w: w, pal: pal} }

// Observe prints the line of an event, if it has one.
func (p *Progress) Observe(e controller.Event) {
	var line string
	switch e.Kind {
	case controller.EventTurnStarted:
		line = StartedLine(e, p.pal) + " started"
	case controller.EventTurnRecorded:
		line = recordedLine(e.Record, p.pal)
	case controller.EventDebateEnded:
		line = endedLine(e, p.pal)
	case controller.EventNote:
		line = "note: " + Clean(e.Line)
	case controller.EventWaiting:
		line = Clean(e.Line)
	default:
		return // the agent's activity changes too often for a log
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}

// Write takes log lines (warnings) between the progress lines.
func (p *Progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.w.Write(b)
}

// Display is the live view on a terminal: one line per running session
// (a round table's reviewers run side by side), each with its turn, how
// long it has run and what the agent is doing, redrawn every second;
// above them, a line per attempt as it is recorded.
type Display struct {
	w       io.Writer
	width   int // the terminal's columns
	pal     Palette
	mu      sync.Mutex
	running []*liveLine // in the order they started
	idle    string      // shown when nothing runs (walkie follow: "waiting for …")
	drawn   int         // live lines now on the screen
	now     func() time.Time
	done    chan struct{}
	stopped bool // after stop, nothing is drawn
	once    sync.Once
	wg      sync.WaitGroup
}

// liveLine is one running session.
type liveLine struct {
	started  controller.Event
	label    string // a session that is not a turn: "drafting the briefing · claude"
	activity string
}

// NewDisplay draws on the terminal w, its clocks moved every second.
func NewDisplay(w io.Writer, pal Palette) *Display {
	d := quietDisplay(w, pal)
	d.wg.Add(1)
	go d.tick()
	return d
}

// quietDisplay is a display redrawn by events alone, without the ticker
// that moves its clocks.
func quietDisplay(w io.Writer, pal Palette) *Display {
	return &Display{w: w, width: Width(w, 80), pal: pal, now: time.Now, done: make(chan struct{})}
}

func (d *Display) tick() {
	defer d.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-t.C:
			d.mu.Lock()
			d.redraw()
			d.mu.Unlock()
		}
	}
}

// Stop ends the display, its live lines erased; safe to call twice.
func (d *Display) Stop() {
	d.once.Do(func() {
		close(d.done)
		d.wg.Wait()
		d.mu.Lock()
		d.clear()
		d.running, d.stopped = nil, true
		d.mu.Unlock()
	})
}

// Observe shows an event: a session started, its output, an attempt
// recorded, a note, the end.
func (d *Display) Observe(e controller.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch e.Kind {
	case controller.EventTurnStarted:
		d.forget(e.Agent)
		d.running = append(d.running, &liveLine{started: e})
	case controller.EventOutput:
		// Until the controller says what the agent does, Line is its
		// latest output line; either way it is shown as it comes.
		l := d.find(e.Agent)
		if l == nil {
			l = &liveLine{started: e}
			d.running = append(d.running, l)
		}
		l.activity = e.Line
	case controller.EventTurnRecorded:
		d.forget(e.Agent)
		d.above(d.mark(e.Record) + recordedLine(e.Record, d.pal))
		return
	case controller.EventDebateEnded:
		d.running = nil
		d.above(endedLine(e, d.pal))
		return
	case controller.EventNote:
		d.above(d.pal.Dim("note: ") + Clean(e.Line))
		return
	case controller.EventWaiting:
		// Nobody runs while a person is awaited: their turn is no live line.
		d.running = nil
		d.above(Clean(e.Line))
		return
	}
	d.redraw()
}

func (d *Display) mark(r *controller.TurnRecord) string {
	if r.Outcome == walkie.OutcomeAccepted {
		return d.pal.Green("✓") + " "
	}
	return d.pal.Red("✗") + " "
}

func (d *Display) find(agent string) *liveLine {
	for _, l := range d.running {
		if l.started.Agent == agent {
			return l
		}
	}
	return nil
}

func (d *Display) forget(agent string) {
	d.running = slices.DeleteFunc(d.running, func(l *liveLine) bool { return l.started.Agent == agent })
}

// Follow replaces the running sessions with those another process's
// controller lists (walkie follow reads its activity.json), and sets what
// to show when none runs.
func (d *Display) Follow(sessions []walkie.SessionActivity, idle string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.running = d.running[:0]
	for _, s := range sessions {
		d.running = append(d.running, &liveLine{activity: s.Line, started: controller.Event{Kind: controller.EventTurnStarted,
			Turn: s.Turn, Round: s.Round, Agent: s.Agent, Attempt: s.Attempt, Started: s.Started}})
	}
	d.idle = idle
	d.redraw()
}

// Task shows a session that is not a turn, such as the distillation of a
// briefing, under label, until done.
func (d *Display) Task(label string) (activity func(string), done func()) {
	l := &liveLine{label: label, started: controller.Event{Started: d.now()}}
	d.mu.Lock()
	d.running = append(d.running, l)
	d.redraw()
	d.mu.Unlock()
	return func(a string) {
			d.mu.Lock()
			defer d.mu.Unlock()
			l.activity = a
			d.redraw()
		}, func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.running = slices.DeleteFunc(d.running, func(x *liveLine) bool { return x == l })
			d.redraw()
		}
}

// Print prints text that stays (an entry, the end) above the live lines.
func (d *Display) Print(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.above(strings.TrimRight(text, "\n"))
}

// Write takes log lines (warnings) and prints them above the live lines.
func (d *Display) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.above(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// above prints a line that stays, then the live lines under it.
func (d *Display) above(line string) {
	d.clear()
	fmt.Fprintln(d.w, line)
	d.redraw()
}

// clear erases the live lines, the last first, and leaves the cursor at
// the start of the first. Line by line rather than "erase to the end of
// the screen": some terminals (tmux's scroll-on-clear) keep a screen erased
// from its top-left corner in the scrollback, a copy per redraw.
func (d *Display) clear() {
	if d.drawn == 0 {
		return
	}
	fmt.Fprint(d.w, "\r\x1b[2K"+strings.Repeat("\x1b[1A\r\x1b[2K", d.drawn-1))
	d.drawn = 0
}

func (d *Display) redraw() {
	if d.stopped {
		return
	}
	d.clear()
	lines := make([]string, 0, len(d.running))
	for _, l := range d.running {
		lines = append(lines, d.liveText(l))
	}
	if len(lines) == 0 && d.idle != "" {
		lines = append(lines, d.pal.Dim("… "+d.idle))
	}
	for i, l := range lines {
		// One column short of the width: writing the last column wraps
		// the cursor on some terminals, and the next redraw would then
		// start a line too low.
		lines[i] = Fit(l, d.width-1)
	}
	fmt.Fprint(d.w, strings.Join(lines, "\n"))
	d.drawn = len(lines)
}

// liveText is "▶ turn 3 · codex (round 2, attempt 1) 12s  reading api.go".
func (d *Display) liveText(l *liveLine) string {
	e := l.started
	what := l.label
	if what == "" {
		what = StartedLine(e, d.pal)
	}
	s := d.pal.Cyan("▶") + " " + what + " " + d.pal.Dim(Duration(d.now().Sub(e.Started).Truncate(time.Second)))
	if l.activity != "" {
		s += "  " + Clean(l.activity)
	}
	return s
}

// Palette is the display's palette.
func (d *Display) Palette() Palette { return d.pal }
