package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// newLogger builds the zap logger: human-readable on a terminal, JSON
// otherwise, unless --log-format says which.
func newLogger(w io.Writer, format string, verbose, tty bool) (*zap.Logger, error) {
	level := zap.InfoLevel
	if verbose {
		level = zap.DebugLevel
	}
	switch format {
	case "json":
		return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(encoderConfig()), zapcore.AddSync(w), level)), nil
	case "console":
		return consoleLogger(w, level), nil
	case "auto", "":
		if tty {
			return consoleLogger(w, level), nil
		}
		return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(encoderConfig()), zapcore.AddSync(w), level)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use auto, console or json", format)
}

func encoderConfig() zapcore.EncoderConfig {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey, cfg.EncodeTime = "ts", zapcore.ISO8601TimeEncoder
	return cfg
}

func consoleLogger(w io.Writer, level zapcore.Level) *zap.Logger {
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(encoderConfig()), zapcore.AddSync(w), level))
}

// runOutput is how a controller run shows itself on standard error: the
// live display on a terminal, readable progress lines elsewhere (a pipe,
// a CI log), or log lines when --log-format or --verbose ask for them.
type runOutput struct {
	log     *zap.Logger
	observe func(controller.Event) // nil when the log speaks alone
	stop    func()                 // ends the display; safe to call twice
	disp    *display               // the live display, on a terminal
}

func newRunOutput(c *cli.Context) (*runOutput, error) {
	stderr := c.App.ErrWriter
	tty := isTerminal(stderr)
	format := c.String("log-format")
	if format != "auto" || c.Bool("verbose") {
		log, err := newLogger(stderr, format, c.Bool("verbose"), tty)
		if err != nil {
			return nil, withCode(exitBadInput, err)
		}
		return &runOutput{log: log, stop: func() {}}, nil
	}
	pal := colorFor(c, stderr)
	if tty {
		d := newDisplay(stderr, pal)
		// Warnings and errors still show, as lines above the live ones.
		return &runOutput{log: consoleLogger(d, zap.WarnLevel), observe: d.observe, stop: d.stop, disp: d}, nil
	}
	p := &progress{w: stderr, pal: pal}
	return &runOutput{log: consoleLogger(p, zap.WarnLevel), observe: p.observe, stop: func() {}}, nil
}

// startedLine is "turn 3 · codex (round 2, attempt 1)".
func startedLine(e controller.Event, pal palette) string {
	if e.Turn == 0 && e.Line != "" { // a round table's phase names itself
		return fmt.Sprintf("%s · %s (attempt %d)", e.Line, pal.bold(e.Agent), e.Attempt)
	}
	return fmt.Sprintf("turn %d · %s (round %d, attempt %d)", e.Turn, pal.bold(e.Agent), e.Round, e.Attempt)
}

// recordedLine is one attempt as it ended: "turn 3 · codex accepted in
// 1.5s · signed · $0.0042 · turn recorded".
func recordedLine(r *controller.TurnRecord, pal palette) string {
	what := fmt.Sprintf("turn %d", r.Turn)
	if r.Turn == 0 && r.Role != "" { // a round table's phase
		what = r.Role
	}
	parts := []string{fmt.Sprintf("%s · %s %s in %s", what, pal.bold(r.Agent), pal.outcome(r.Outcome),
		formatDuration(time.Duration(r.DurationMS)*time.Millisecond))}
	if r.Signed {
		parts = append(parts, pal.green("signed"))
	}
	if cost := costCell(r.Usage); cost != "?" {
		parts = append(parts, cost)
	}
	if r.Detail != "" {
		parts = append(parts, r.Detail)
	}
	return strings.Join(parts, " · ")
}

// endedLine is how the run ended, as the last progress line.
func endedLine(e controller.Event, pal palette) string {
	if e.Status == walkie.StatusClosed {
		return "thread " + pal.status(e.Status) + " " + e.Line
	}
	if e.Status == walkie.StatusConverged {
		s := "debate " + pal.status(e.Status)
		if e.Line != "" {
			s += ": " + e.Line
		}
		return s
	}
	// "stopped: max-rounds (reached its round cap of 6)", as the error
	// says it, never "debate max-rounds".
	return strings.Replace(endLine(e.Status, e.Line), e.Status, pal.status(e.Status), 1)
}

// progress prints one readable line per event where there is no terminal
// to redraw: a pipe, a CI log, `make demo > out`.
type progress struct {
	mu  sync.Mutex
	w   io.Writer
	pal palette
}

func (p *progress) observe(e controller.Event) {
	var line string
	switch e.Kind {
	case controller.EventTurnStarted:
		line = startedLine(e, p.pal) + " started"
	case controller.EventTurnRecorded:
		line = recordedLine(e.Record, p.pal)
	case controller.EventDebateEnded:
		line = endedLine(e, p.pal)
	case controller.EventNote:
		line = "note: " + e.Line
	case controller.EventWaiting:
		line = e.Line
	default:
		return // the agent's activity changes too often for a log
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}

// Write takes log lines (warnings) between the progress lines.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.w.Write(b)
}

// display is the live view on a terminal: one line per running session
// (a round table's reviewers run side by side), each with its turn, how
// long it has run and what the agent is doing, redrawn every second;
// above them, a line per attempt as it is recorded.
type display struct {
	w       io.Writer
	width   int // the terminal's columns
	pal     palette
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

func newDisplay(w io.Writer, pal palette) *display {
	d := quietDisplay(w, pal)
	d.wg.Add(1)
	go d.tick()
	return d
}

// quietDisplay is a display redrawn by events alone, without the ticker
// that moves its clocks.
func quietDisplay(w io.Writer, pal palette) *display {
	return &display{w: w, width: termWidth(w, 80), pal: pal, now: time.Now, done: make(chan struct{})}
}

func (d *display) tick() {
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

func (d *display) stop() {
	d.once.Do(func() {
		close(d.done)
		d.wg.Wait()
		d.mu.Lock()
		d.clear()
		d.running, d.stopped = nil, true
		d.mu.Unlock()
	})
}

func (d *display) observe(e controller.Event) {
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
		d.above(d.pal.dim("note: ") + e.Line)
		return
	case controller.EventWaiting:
		// Nobody runs while a person is awaited: their turn is no live line.
		d.running = nil
		d.above(e.Line)
		return
	}
	d.redraw()
}

func (d *display) mark(r *controller.TurnRecord) string {
	if r.Outcome == walkie.OutcomeAccepted {
		return d.pal.green("✓") + " "
	}
	return d.pal.red("✗") + " "
}

func (d *display) find(agent string) *liveLine {
	for _, l := range d.running {
		if l.started.Agent == agent {
			return l
		}
	}
	return nil
}

func (d *display) forget(agent string) {
	d.running = slices.DeleteFunc(d.running, func(l *liveLine) bool { return l.started.Agent == agent })
}

// follow replaces the running sessions with those another process's
// controller lists (walkie follow reads its activity.json), and sets what
// to show when none runs.
func (d *display) follow(sessions []walkie.SessionActivity, idle string) {
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

// task shows a session that is not a turn, such as the distillation of a
// briefing, under label, until done.
func (d *display) task(label string) (activity func(string), done func()) {
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

// print prints text that stays (an entry, the end) above the live lines.
func (d *display) print(text string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.above(strings.TrimRight(text, "\n"))
}

// Write takes log lines (warnings) and prints them above the live lines.
func (d *display) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.above(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// above prints a line that stays, then the live lines under it.
func (d *display) above(line string) {
	d.clear()
	fmt.Fprintln(d.w, line)
	d.redraw()
}

// clear erases the live lines, the last first, and leaves the cursor at
// the start of the first. Line by line rather than "erase to the end of
// the screen": some terminals (tmux's scroll-on-clear) keep a screen erased
// from its top-left corner in the scrollback, a copy per redraw.
func (d *display) clear() {
	if d.drawn == 0 {
		return
	}
	fmt.Fprint(d.w, "\r\x1b[2K"+strings.Repeat("\x1b[1A\r\x1b[2K", d.drawn-1))
	d.drawn = 0
}

func (d *display) redraw() {
	if d.stopped {
		return
	}
	d.clear()
	lines := make([]string, 0, len(d.running))
	for _, l := range d.running {
		lines = append(lines, d.liveText(l))
	}
	if len(lines) == 0 && d.idle != "" {
		lines = append(lines, d.pal.dim("… "+d.idle))
	}
	for i, l := range lines {
		// One column short of the width: writing the last column wraps
		// the cursor on some terminals, and the next redraw would then
		// start a line too low.
		lines[i] = fit(l, d.width-1)
	}
	fmt.Fprint(d.w, strings.Join(lines, "\n"))
	d.drawn = len(lines)
}

// liveText is "▶ turn 3 · codex (round 2, attempt 1) 12s  reading api.go".
func (d *display) liveText(l *liveLine) string {
	e := l.started
	what := l.label
	if what == "" {
		what = startedLine(e, d.pal)
	}
	s := d.pal.cyan("▶") + " " + what + " " + d.pal.dim(formatDuration(d.now().Sub(e.Started).Truncate(time.Second)))
	if l.activity != "" {
		s += "  " + l.activity
	}
	return s
}

// logFormatFlag and verboseFlag are how a command that logs as the
// daemon does lets its log be chosen; commandLogger builds that log.
func logFormatFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-format", Value: "auto", Usage: "auto (human on a terminal, JSON otherwise), console or json"}
}

func verboseFlag() cli.Flag {
	return &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "debug logging"}
}

// commandLogger is newLogger as --log-format and --verbose ask, on the
// command's standard error; a --log-format it does not know is bad input.
func commandLogger(c *cli.Context) (*zap.Logger, error) {
	stderr := c.App.ErrWriter
	log, err := newLogger(stderr, c.String("log-format"), c.Bool("verbose"), isTerminal(stderr))
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	return log, nil
}

// commandLoggerAndConfig is what serve, watch and worker start with: the
// logger of commandLogger and the config their --config names. The
// caller syncs the logger when it is done.
func commandLoggerAndConfig(c *cli.Context) (*zap.Logger, *config.Config, error) {
	log, err := commandLogger(c)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.Load(c.String("config"))
	if err != nil {
		_ = log.Sync()
		return nil, nil, withCode(exitBadInput, err)
	}
	return log, cfg, nil
}
