package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
version the agent's CLI gave. A turn no session walkie ran wrote (posted
with walkie post, by a person or an agent walkie did not start) has a line
of its own, outcome "posted", so it never passes for an agent's. Below the table: the total, how many attempts
are of unknown cost, and where the transcripts are, with the one of each
attempt that failed. --json prints every field, the command as run (secrets
redacted) and the prompt's sha256 among them.

EXAMPLES:
   walkie log api.walkie.md
   walkie log api.walkie.md --jq 'select(.outcome != "accepted") | .detail'`,
		Flags: jsonFlags(controller.TurnRecord{}),
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, logRun, &logOptions{IO: f.IO, File: file, JSON: exp.inLines()})
		},
	}
}

// logOptions are walkie log's.
type logOptions struct {
	IO   *IOStreams
	File string
	JSON *jsonExporter // JSON lines, one per record
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
	// A turn posted outside any session has a line of its own, so it
	// does not pass for missing; a record that cannot be read leaves the
	// attempts alone.
	if d, err := walkie.Load(file); err == nil {
		recs = controller.WithPosts(d, recs)
	}
	if o.JSON != nil {
		return o.JSON.Write(w, recs)
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
		try, cost, tokens := fmt.Sprint(r.Attempt), term.CostCell(r.Usage), term.TokensCell(r.Usage, r.SentBytes)
		if r.Outcome == controller.OutcomePosted {
			try, cost, tokens = "-", "-", "-" // no session: nothing walkie ran, sent or paid
		}
		if r.Signed {
			outcome += " ✓"
		}
		model := orDash(r.Model)
		if r.Effort != "" {
			model += " (" + r.Effort + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Turn, r.Agent, try, r.Started.Local().Format("15:04:05"),
			term.Duration(time.Duration(r.DurationMS)*time.Millisecond), outcome, exit, r.Bytes, cost, tokens, model,
			orDash(walkie.Clip(r.CLIVersion, 24)), walkie.Clip(r.Detail, 60))
	}
	tw.Flush()
	attempts := slices.DeleteFunc(slices.Clone(recs), func(r controller.TurnRecord) bool { return r.Outcome == controller.OutcomePosted })
	if t := term.TotalCost(attempts); t != "" {
		fmt.Fprintln(w, t)
	}
	if t := term.TotalTokens(attempts); t != "" {
		fmt.Fprintln(w, t)
	}
}
