package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/walkie-sh/walkie/walkie"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termWidth is the terminal's width in columns, or fallback when w is
// not a terminal.
func termWidth(w io.Writer, fallback int) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			return cols
		}
	}
	return fallback
}

// colorFlag is the global --color flag.
func colorFlag() cli.Flag {
	return &cli.StringFlag{Name: "color", Value: "auto", Usage: "colour: auto (on a terminal, unless NO_COLOR is set), always or never"}
}

// checkColor refuses a --color value other than the three.
func checkColor(c *cli.Context) error {
	switch v := c.String("color"); v {
	case "auto", "always", "never", "":
		return nil
	default:
		return withCode(exitBadInput, fmt.Errorf("--color %q: use auto, always or never", v))
	}
}

// colorFor decides colour for output to w: --color always or never say
// so; auto means a terminal, with NO_COLOR unset (https://no-color.org)
// and TERM not "dumb".
func colorFor(c *cli.Context, w io.Writer) palette {
	switch c.String("color") {
	case "always":
		return palette{on: true}
	case "never":
		return palette{}
	}
	return palette{on: isTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"}
}

// palette paints text with SGR sequences, or leaves it alone when off.
type palette struct{ on bool }

func (p palette) paint(sgr, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}

func (p palette) bold(s string) string      { return p.paint("1", s) }
func (p palette) dim(s string) string       { return p.paint("2", s) }
func (p palette) italic(s string) string    { return p.paint("3", s) }
func (p palette) underline(s string) string { return p.paint("4", s) }
func (p palette) strike(s string) string    { return p.paint("9", s) }
func (p palette) green(s string) string     { return p.paint("32", s) }
func (p palette) yellow(s string) string    { return p.paint("33", s) }
func (p palette) red(s string) string       { return p.paint("31", s) }
func (p palette) cyan(s string) string      { return p.paint("36", s) }

// outcome paints an attempt's outcome: green when the turn is in, yellow
// for what a retry may cure, red for what it will not.
func (p palette) outcome(o walkie.Outcome) string {
	switch {
	case o == walkie.OutcomeAccepted:
		return p.green(string(o))
	case !o.Retryable(), o == walkie.OutcomeTampered:
		return p.red(string(o))
	}
	return p.yellow(string(o))
}

// status paints a debate's status.
func (p palette) status(s string) string {
	switch s {
	case walkie.StatusConverged, walkie.StatusClosed:
		return p.green(s)
	case walkie.StatusOpen, walkie.StatusHalted:
		return p.yellow(s)
	}
	return p.red(s)
}

// fit cuts a line, colours and all, to n columns: wide characters count
// twice and escape sequences not at all.
func fit(s string, n int) string {
	s = strings.ReplaceAll(s, "\t", " ")
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, "…")
}

// formatDuration is the one way walkie writes a duration, live and in
// the log alike: tenths of a second up to a minute ("0.9s", "12.3s",
// "12s" when whole), then minutes and seconds ("2m05s"), then hours and
// minutes ("1h02m").
func formatDuration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d >= time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	s := fmt.Sprintf("%.1f", d.Seconds())
	if strings.HasSuffix(s, ".0") {
		s = s[:len(s)-2]
	}
	if s == "60" {
		return "1m00s"
	}
	return s + "s"
}
