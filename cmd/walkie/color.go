package main

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
)

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

// colorFor decides colour for output to w: --color always or never say
// so; auto means a terminal, with NO_COLOR unset (https://no-color.org)
// and TERM not "dumb".
func colorFor(c *cli.Context, w io.Writer) term.Palette {
	switch c.String("color") {
	case "always":
		return term.Palette{On: true}
	case "never":
		return term.Palette{}
	}
	return term.Palette{On: term.IsTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"}
}
