package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/controller"
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
   walkie show api.walkie.md --raw > copy.walkie.md
   walkie show api.walkie.md --json status,entries --jq '.entries[] | select(.posted) | .turn'`,
		Flags: append([]cli.Flag{&cli.BoolFlag{Name: "raw", Usage: "print the file as it is, markers and all"}, standingConfigFlag()}, jsonFlags(showView{})...),
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			if exp != nil && c.Bool("raw") {
				return withCode(exitBadInput, errors.New("--raw prints the file's bytes and --json (or --jq) its view: give one"))
			}
			return runWith(c.Context, runF, showRun, &showOptions{IO: f.IO, File: file, Raw: c.Bool("raw"), JSON: exp, Stand: f.Standing(c.String("config"))})
		},
	}
}

// showOptions are walkie show's.
type showOptions struct {
	IO    *IOStreams
	File  string
	Raw   bool
	JSON  *jsonExporter
	Stand standingReader
}

// showView is walkie show --json: where the debate stands (the header),
// its briefing and its entries, each marked as the rule lines mark it.
type showView struct {
	*controller.Standing
	Briefing string       `json:"briefing"`
	Entries  []shownEntry `json:"entries"`
}

// shownEntry is an entry as walkie read --json has it, with what show's
// rule line adds: its kind, its round and whether it was posted outside
// any session walkie ran.
type shownEntry struct {
	entryJSON
	Kind   string `json:"kind"` // turn or supervisor
	Round  int    `json:"round,omitempty"`
	Posted bool   `json:"posted"`
}

func newShowView(s *controller.Standing, d *walkie.Doc, posted map[int]bool) showView {
	v := showView{Standing: s, Briefing: string(d.Briefing), Entries: []shownEntry{}}
	for i := range d.Entries {
		e := &d.Entries[i]
		se := shownEntry{entryJSON: entryOf(e), Kind: "supervisor"}
		if e.Kind == walkie.KindTurn {
			se.Kind, se.Round, se.Posted = "turn", d.Meta.RoundOf(e.Turn), posted[e.Marker.Seq]
		}
		v.Entries = append(v.Entries, se)
	}
	return v
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
	posted, err := controller.PostedTurns(d)
	if err != nil {
		return err
	}
	r.MarkPosted(posted)
	s, err := o.Stand.of(d)
	if err != nil {
		return err
	}
	if o.JSON != nil {
		err = o.JSON.Write(w, newShowView(&s, d, posted))
	} else {
		r.Record(w, &s, d)
	}
	if err != nil {
		return err
	}
	if err := d.Verify(); err != nil {
		return withCode(exitUnverified, fmt.Errorf("shown, but the record does not verify: %w", err))
	}
	return nil
}
