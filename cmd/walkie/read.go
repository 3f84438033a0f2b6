package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/walkie"
)

func readCommand(f *Factory, runF func(context.Context, *readOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "read",
		Usage:     "print the entries after a sequence number, for a live session",
		ArgsUsage: "FILE",
		Description: `Prints the recorded entries after --since SEQ (all of them without it), as
they stand in the file: heading, text and marker, one blank line between
them. --type keeps only entries of those types (repeat it, or separate with
commas). A live session that answers the doorbell reads only what is new:
the doorbell's seq (.walkie/ID/signal.json) is where the next read starts.
The record is verified first; one that does not verify is refused (exit 4),
so nobody acts on an edited record. Nothing new prints nothing (exit 0).

EXAMPLES:
   walkie read reviews/login.walkie.md --since 4
   walkie read reviews/login.walkie.md --type verdict --jq '.[-1].verdict'`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "since", Usage: "print only entries with a higher sequence number"},
			&cli.StringSliceFlag{Name: "type", Usage: "print only entries of these types"},
		}, jsonFlags(entryJSON{})...),
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			types := splitNames(c.StringSlice("type"))
			for _, t := range types {
				if !slices.Contains(walkie.EntryTypes, t) {
					return withCode(exitBadInput, fmt.Errorf("--type %s is not an entry type (types: %s)", t, strings.Join(walkie.EntryTypes, ", ")))
				}
			}
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, readRun, &readOptions{IO: f.IO, File: file, Since: c.Int("since"), Types: types, JSON: exp})
		},
	}
}

// readOptions are walkie read's: which entries to print.
type readOptions struct {
	IO    *IOStreams
	File  string
	Since int           // only entries with a higher sequence number
	Types []string      // only entries of these types; none: all
	JSON  *jsonExporter // a JSON list
}

func readRun(_ context.Context, o *readOptions) error {
	d, err := walkie.Load(o.File)
	if err != nil {
		return err
	}
	// An agent writing its turn now leaves a tail: what is recorded
	// before it still reads.
	var torn *walkie.TornTailError
	if err := d.Verify(); err != nil && !errors.As(err, &torn) {
		return withCode(exitUnverified, err)
	}
	var out []*walkie.Entry
	for i := range d.Entries {
		e := &d.Entries[i]
		if e.Marker.Seq > o.Since && (len(o.Types) == 0 || slices.Contains(o.Types, e.Marker.Tags.Type)) {
			out = append(out, e)
		}
	}
	w := o.IO.Out
	if o.JSON != nil {
		return o.JSON.Write(w, entriesJSON(out))
	}
	for i, e := range out {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprint(w, strings.TrimLeft(string(e.Raw), "\r\n"))
	}
	return nil
}

// entryJSON is one entry as walkie read --json prints it.
type entryJSON struct {
	Seq     int       `json:"seq"`
	Turn    int       `json:"turn,omitempty"`
	Agent   string    `json:"agent"`
	At      time.Time `json:"at"`
	Type    string    `json:"type,omitempty"`
	Verdict string    `json:"verdict,omitempty"`
	Refs    []string  `json:"refs,omitempty"`
	Signed  bool      `json:"signed"`
	Text    string    `json:"text"`
}

// entriesJSON are es as walkie read --json prints them.
func entriesJSON(es []*walkie.Entry) []entryJSON {
	list := []entryJSON{}
	for _, e := range es {
		list = append(list, entryOf(e))
	}
	return list
}

func entryOf(e *walkie.Entry) entryJSON {
	t := e.Marker.Tags
	j := entryJSON{Seq: e.Marker.Seq, Turn: e.Turn, Agent: e.Agent, At: e.Marker.At, Type: t.Type, Verdict: t.Verdict, Signed: e.Signed(), Text: e.Text()}
	if len(t.Refs) > 0 {
		j.Refs = t.RefStrings()
	}
	return j
}
