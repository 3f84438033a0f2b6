package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

func logCommand(f *Factory, runF func(context.Context, *logOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "show every turn attempt: agent, timing, outcome, exit, output, cost, model, CLI version",
		ArgsUsage: "FILE",
		Description: `Reads the attempts in .walkie/ID/log.jsonl. Costs marked ~ are estimates from the config's
pricing table; the others were reported by the agent CLI itself; ? is a cost
walkie could not tell (and +? a figure the CLI was ended before it completed).
TOKENS are the input (of it, read from the provider's prompt cache) and
output tokens the CLI reported, or the bytes walkie sent to one that
reports none. MODEL is the model (and reasoning effort) the attempt ran with, CLI the
version the agent's CLI gave. Below the table: the total, how many attempts
are of unknown cost, and where the transcripts are, with the one of each
attempt that failed. --json prints every field, the command as run (secrets
redacted) and the prompt's sha256 among them.

EXAMPLES:
   walkie log api.walkie.md
   walkie log api.walkie.md --json | jq 'select(.outcome != "accepted")'`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the records as JSON lines"}},
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, logRun, &logOptions{IO: f.IO, File: file, JSON: c.Bool("json")})
		},
	}
}

// logOptions are walkie log's.
type logOptions struct {
	IO   *IOStreams
	File string
	JSON bool
}

func logRun(_ context.Context, o *logOptions) error {
	file, w := o.File, o.IO.Out
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return err
	}
	recs, err := controller.ReadTurnLog(walkie.StateDir(file, meta.ID))
	if err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(recs) == 0 {
		fmt.Fprintf(w, "%s: no turn attempts yet\n", file)
		return nil
	}
	return writeClean(w, func(w io.Writer) error {
		writeLogTable(w, recs)
		writeTranscripts(w, walkie.StateDir(file, meta.ID), recs)
		return nil
	})
}

// writeTranscripts says where the attempts' transcripts are: the folder,
// and the transcript of each attempt that did not go through, which is
// where the reason is.
func writeTranscripts(w io.Writer, stateDir string, recs []controller.TurnRecord) {
	rel := func(p string) string {
		p = filepath.Join(stateDir, p)
		if wd, err := os.Getwd(); err == nil {
			if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
				return r
			}
		}
		return p
	}
	fmt.Fprintf(w, "transcripts: %s\n", rel("turns")+string(filepath.Separator))
	for _, r := range recs {
		if r.Outcome != walkie.OutcomeAccepted && r.Transcript.Text != "" {
			fmt.Fprintf(w, "  turn %d %s try %d (%s): %s\n", r.Turn, r.Agent, r.Attempt, r.Outcome, rel(r.Transcript.Text))
		}
	}
}

// writeLogTable prints attempts as an aligned table, with the total cost,
// which says how many attempts are of unknown cost.
func writeLogTable(w io.Writer, recs []controller.TurnRecord) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tAGENT\tTRY\tSTART\tDURATION\tOUTCOME\tEXIT\tBYTES\tCOST\tTOKENS\tMODEL\tCLI\tDETAIL")
	for _, r := range recs {
		exit := "-"
		switch {
		case r.Signal != "":
			exit = r.Signal
		case r.ExitCode != nil:
			exit = fmt.Sprint(*r.ExitCode)
		}
		outcome := r.Outcome
		if r.Signed {
			outcome += " ✓"
		}
		model := orDash(r.Model)
		if r.Effort != "" {
			model += " (" + r.Effort + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Turn, r.Agent, r.Attempt, r.Started.Local().Format("15:04:05"),
			term.Duration(time.Duration(r.DurationMS)*time.Millisecond), outcome, exit, r.Bytes, term.CostCell(r.Usage), term.TokensCell(r.Usage, r.SentBytes), model,
			orDash(walkie.Clip(r.CLIVersion, 24)), walkie.Clip(r.Detail, 60))
	}
	tw.Flush()
	if t := term.TotalCost(recs); t != "" {
		fmt.Fprintln(w, t)
	}
	if t := term.TotalTokens(recs); t != "" {
		fmt.Fprintln(w, t)
	}
}
