package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/walkie"
)

func showCommand() *cli.Command {
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
		Flags: []cli.Flag{&cli.BoolFlag{Name: "raw", Usage: "print the file as it is, markers and all"}},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			w := c.App.Writer
			if c.Bool("raw") {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = io.Copy(w, f)
				return err
			}
			d, err := walkie.Load(file)
			if err != nil {
				return err
			}
			r := newRenderer(colorFor(c, w), termWidth(w, 80), time.Local)
			if err := writeShow(w, r, d); err != nil {
				return err
			}
			if err := d.Verify(); err != nil {
				return withCode(exitUnverified, fmt.Errorf("shown, but the record does not verify: %w", err))
			}
			return nil
		},
	}
}

// writeShow prints the whole record for reading.
func writeShow(w io.Writer, r *renderer, d *walkie.Doc) error {
	v, err := viewOf(d)
	if err != nil {
		return err
	}
	fmt.Fprint(w, r.header(v, d))
	fmt.Fprint(w, "\n"+r.briefing(d))
	for i := range d.Entries {
		fmt.Fprint(w, "\n"+r.entry(d, &d.Entries[i]))
	}
	if len(d.Entries) == 0 {
		fmt.Fprintln(w, "\n"+r.pal.dim("no entries yet"))
	}
	return nil
}
