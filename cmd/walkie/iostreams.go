package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
)

// IOStreams are a command's standard input, output and error, whether
// each is a terminal (asked of the file the first time, or set by a
// test), and the colour --color asks for.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Color is the global --color: auto, always or never.
	Color string

	inTTY, outTTY, errTTY *bool
}

// systemIO is the process's own streams.
func systemIO(stdin io.Reader, stdout, stderr io.Writer) *IOStreams {
	return &IOStreams{In: stdin, Out: stdout, ErrOut: stderr, Color: "auto"}
}

// isTTY is whether the stream is a terminal, asked once.
func isTTY(known **bool, stream any) bool {
	if *known == nil {
		f, ok := stream.(*os.File)
		tty := ok && term.IsTerminal(f)
		*known = &tty
	}
	return **known
}

// IsStdinTTY, IsStdoutTTY and IsStderrTTY say whether each stream is a
// terminal.
func (s *IOStreams) IsStdinTTY() bool  { return isTTY(&s.inTTY, s.In) }
func (s *IOStreams) IsStdoutTTY() bool { return isTTY(&s.outTTY, s.Out) }
func (s *IOStreams) IsStderrTTY() bool { return isTTY(&s.errTTY, s.ErrOut) }

// SetStdinTTY, SetStdoutTTY and SetStderrTTY say it for a test's streams.
func (s *IOStreams) SetStdinTTY(tty bool)  { s.inTTY = &tty }
func (s *IOStreams) SetStdoutTTY(tty bool) { s.outTTY = &tty }
func (s *IOStreams) SetStderrTTY(tty bool) { s.errTTY = &tty }

// OutPalette and ErrPalette are the colours for standard output and
// error: --color always or never say so; auto means a terminal, with
// NO_COLOR unset (https://no-color.org) and TERM not "dumb".
func (s *IOStreams) OutPalette() term.Palette { return s.palette(s.IsStdoutTTY()) }
func (s *IOStreams) ErrPalette() term.Palette { return s.palette(s.IsStderrTTY()) }

func (s *IOStreams) palette(tty bool) term.Palette {
	switch s.Color {
	case "always":
		return term.Palette{On: true}
	case "never":
		return term.Palette{}
	}
	return term.Palette{On: tty && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"}
}

// OutWidth is standard output's width in columns: the terminal's, else 80.
func (s *IOStreams) OutWidth() int { return term.Width(s.Out, 80) }

// CanPrompt says whether a person can answer a question on standard input.
func (s *IOStreams) CanPrompt() bool { return s.IsStdinTTY() }

// Confirm asks a yes/no question on standard output and reads one line.
func (s *IOStreams) Confirm(question string) bool {
	fmt.Fprint(s.Out, question)
	line, _ := bufio.NewReader(s.In).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// colorFlag is the global --color flag.
func colorFlag() cli.Flag {
	return &cli.StringFlag{Name: "color", Value: "auto", Usage: "colour: auto (on a terminal, unless NO_COLOR is set), always or never"}
}

// checkColor refuses a --color value other than the three.
func checkColor(v string) error {
	switch v {
	case "auto", "always", "never", "":
		return nil
	default:
		return withCode(exitBadInput, fmt.Errorf("--color %q: use auto, always or never", v))
	}
}
