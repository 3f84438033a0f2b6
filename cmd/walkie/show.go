package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/walkie"
)

func showCommand(f *Factory, runF func(context.Context, *showOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print the record for reading: each turn with its author, time, round and sign-off",
		ArgsUsage: "FILE",
		Description: `Prints the debate for a person to read: its status, the briefing, then every
entry under a line naming its author, its round, when it was recorded (in
your time zone) and whether it signs off. The markdown is rendered for the
terminal (with colour on a terminal; see --color and NO_COLOR) and the
controller's marker lines are left out.
Piped, it prints plain text. --raw prints the file exactly as it is on disk.

A record that does not verify is still shown, with the reason on standard
error, and the exit code is 4 (as walkie verify).

EXAMPLES:
   walkie show api.walkie.md
   walkie show api.walkie.md | less -R
   walkie show api.walkie.md --raw > copy.walkie.md`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "raw", Usage: "print the file as it is, markers and all"}, standingConfigFlag()},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, showRun, &showOptions{IO: f.IO, File: file, Raw: c.Bool("raw"), Stand: f.Standing(c.String("config"))})
		},
	}
}

// showOptions are walkie show's.
type showOptions struct {
	IO    *IOStreams
	File  string
	Raw   bool
	Stand standingReader
}

func showRun(_ context.Context, o *showOptions) error {
	w := o.IO.Out
	if o.Raw {
		f, err := os.Open(o.File)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(w, f)
		return err
	}
	d, err := walkie.Load(o.File)
	if err != nil {
		return err
	}
	r := term.NewRenderer(o.IO.OutPalette(), o.IO.OutWidth(), time.Local)
	s, err := o.Stand.of(d)
	if err != nil {
		return err
	}
	r.Record(w, &s, d)
	if err := d.Verify(); err != nil {
		return withCode(exitUnverified, fmt.Errorf("shown, but the record does not verify: %w", err))
	}
	return nil
}
