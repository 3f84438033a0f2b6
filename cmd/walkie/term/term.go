package term

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	xterm "golang.org/x/term"

	"github.com/walkie-sh/walkie/walkie"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && xterm.IsTerminal(int(f.Fd()))
}

// Width is the terminal's width in columns, or fallback when w is not a
// terminal.
func Width(w io.Writer, fallback int) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := xterm.GetSize(int(f.Fd())); err == nil && cols > 20 {
			return cols
		}
	}
	return fallback
}

// Palette paints text with SGR sequences, or leaves it alone when off.
type Palette struct{ On bool }

func (p Palette) paint(sgr, s string) string {
	if !p.On || s == "" {
		return s
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}

// Bold, Dim, Green, Yellow, Red and Cyan paint s, when the palette is on.
func (p Palette) Bold(s string) string      { return p.paint("1", s) }
func (p Palette) Dim(s string) string       { return p.paint("2", s) }
func (p Palette) italic(s string) string    { return p.paint("3", s) }
func (p Palette) underline(s string) string { return p.paint("4", s) }
func (p Palette) strike(s string) string    { return p.paint("9", s) }
func (p Palette) Green(s string) string     { return p.paint("32", s) }
func (p Palette) Yellow(s string) string    { return p.paint("33", s) }
func (p Palette) Red(s string) string       { return p.paint("31", s) }
func (p Palette) Cyan(s string) string      { return p.paint("36", s) }

// Outcome paints an attempt's outcome: green when the turn is in, yellow
// for what a retry may cure, red for what it will not.
func (p Palette) Outcome(o walkie.Outcome) string {
	switch {
	case o == walkie.OutcomeAccepted:
		return p.Green(string(o))
	case !o.Retryable(), o == walkie.OutcomeTampered:
		return p.Red(string(o))
	}
	return p.Yellow(string(o))
}

// Status paints a debate's status.
func (p Palette) Status(s string) string {
	switch s {
	case walkie.StatusConverged, walkie.StatusClosed:
		return p.Green(s)
	case walkie.StatusOpen, walkie.StatusHalted:
		return p.Yellow(s)
	}
	return p.Red(s)
}

// Fit cuts a line, colours and all, to n columns: wide characters count
// twice and escape sequences not at all.
func Fit(s string, n int) string {
	s = strings.ReplaceAll(s, "\t", " ")
	if ansi.StringWidth(s) <= n {
		return s
	}
	return ansi.Truncate(s, n, "…")
}

// Duration is the one way walkie writes a duration, live and in the log
// alike: tenths of a second up to a minute ("0.9s", "12.3s", "12s" when
// whole), then minutes and seconds ("2m05s"), then hours and minutes
// ("1h02m").
func Duration(d time.Duration) string {
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
