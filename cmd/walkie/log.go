package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

func logCommand() *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "show every turn attempt: agent, timing, outcome, exit, output, cost",
		ArgsUsage: "FILE",
		Description: `Reads .walkie/ID/turns.jsonl. Costs marked ~ are estimates from the config's
pricing table; the others were reported by the agent CLI itself.

EXAMPLES:
   walkie log api.walkie.md
   walkie log api.walkie.md --json | jq 'select(.outcome != "accepted")'`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the records as JSON lines"}},
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			meta, err := walkie.ReadMeta(file)
			if err != nil {
				return err
			}
			recs, err := controller.ReadTurnLog(walkie.StateDir(file, meta.ID))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				for _, r := range recs {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			if len(recs) == 0 {
				fmt.Fprintf(c.App.Writer, "%s: no turn attempts yet\n", file)
				return nil
			}
			writeLogTable(c.App.Writer, recs)
			return nil
		},
	}
}

// writeLogTable prints attempts as an aligned table.
func writeLogTable(w io.Writer, recs []controller.TurnRecord) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tAGENT\tTRY\tSTART\tDURATION\tOUTCOME\tEXIT\tBYTES\tCOST\tDETAIL")
	total := 0.0
	for _, r := range recs {
		exit := "-"
		switch {
		case r.Signal != "":
			exit = r.Signal
		case r.ExitCode != nil:
			exit = fmt.Sprint(*r.ExitCode)
		}
		cost := "-"
		if r.Usage != nil && r.Usage.CostSource != "" && !strings.HasPrefix(r.Usage.CostSource, "unknown") {
			cost = fmt.Sprintf("$%.4f", r.Usage.CostUSD)
			if r.Usage.CostSource != "reported" {
				cost = "~" + cost
			}
			total += r.Usage.CostUSD
		}
		outcome := r.Outcome
		if r.Signed {
			outcome += " ✓"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Turn, r.Agent, r.Attempt, r.Started.Local().Format("15:04:05"),
			(time.Duration(r.DurationMS) * time.Millisecond).Round(100*time.Millisecond), outcome, exit, r.Bytes, cost, walkie.Clip(r.Detail, 60))
	}
	tw.Flush()
	if total > 0 {
		fmt.Fprintf(w, "total cost $%.4f\n", total)
	}
}
