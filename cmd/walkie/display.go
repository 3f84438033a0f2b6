package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newLogger builds the zap logger: human-readable on a terminal, JSON
// otherwise, unless --log-format says which.
func newLogger(w io.Writer, format string, verbose, tty bool) (*zap.Logger, error) {
	level := zap.InfoLevel
	if verbose {
		level = zap.DebugLevel
	}
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey, cfg.EncodeTime = "ts", zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	switch format {
	case "json":
		enc = zapcore.NewJSONEncoder(cfg)
	case "console":
		enc = zapcore.NewConsoleEncoder(cfg)
	case "auto", "":
		if tty {
			enc = zapcore.NewConsoleEncoder(cfg)
		} else {
			enc = zapcore.NewJSONEncoder(cfg)
		}
	default:
		return nil, fmt.Errorf("--log-format %q: use auto, console or json", format)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(w), level)), nil
}

// display is the live status line on a terminal: the running turn, how
// long it has run, and the agent's latest output line.
type display struct {
	w       io.Writer
	width   int // the terminal's columns
	mu      sync.Mutex
	current *controller.Event
	line    string
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func newDisplay(w io.Writer) *display {
	d := &display{w: w, width: 80, done: make(chan struct{})}
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			d.width = cols
		}
	}
	d.wg.Add(1)
	go d.tick()
	return d
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
		fmt.Fprint(d.w, "\r\x1b[K")
		d.mu.Unlock()
	})
}

func (d *display) observe(e controller.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch e.Kind {
	case controller.EventTurnStarted:
		d.current, d.line = &e, ""
	case controller.EventOutput:
		d.line = e.Line
	case controller.EventTurnRecorded:
		d.current = nil
		r := e.Record
		signed := ""
		if r.Signed {
			signed = "  signed"
		}
		fmt.Fprintf(d.w, "\r\x1b[K  turn %-3d %-10s %-14s %6.1fs%s  %s\n", r.Turn, r.Agent, r.Outcome, float64(r.DurationMS)/1000, signed, r.Detail)
		return
	case controller.EventDebateEnded:
		d.current = nil
		fmt.Fprintf(d.w, "\r\x1b[K  debate %s\n", e.Status)
		return
	case controller.EventNote:
		fmt.Fprintf(d.w, "\r\x1b[K  note: %s\n", e.Line)
	case controller.EventWaiting:
		d.current = nil
		fmt.Fprintf(d.w, "\r\x1b[K  %s\n", e.Line)
		return
	}
	d.redraw()
}

func (d *display) redraw() {
	if d.current == nil {
		return
	}
	e := d.current
	el := time.Since(e.Started).Truncate(time.Second)
	s := fmt.Sprintf("▶ turn %d · %s (round %d, attempt %d) %s", e.Turn, e.Agent, e.Round, e.Attempt, el)
	if d.line != "" {
		s += "  " + d.line
	}
	// One column short of the width: writing the last column wraps the
	// cursor on some terminals, and the next \r would then redraw a line
	// too low.
	fmt.Fprint(d.w, "\r\x1b[K"+walkie.Clip(strings.ReplaceAll(s, "\t", " "), d.width-1))
}
