package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/walkie"
)

func notifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "notify",
		Usage:     "switch the supervisor's copy of every entry on or off for one debate",
		ArgsUsage: "FILE",
		Description: `walkie serve and walkie watch send notification events to the sinks in the
config (command, webhook, Telegram). With notify.copy_supervisor the
supervisor also gets a copy of every new turn; this command overrides that
for one debate. The switch lives in .walkie/ID/state.json, never in the
record, and a running daemon follows it from the next entry on.

EXAMPLES:
   walkie notify api.walkie.md --copy on       # this debate: copy every turn
   walkie notify api.walkie.md --copy off      # this debate: no copies
   walkie notify api.walkie.md --copy default  # follow the config again`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "copy", Usage: "on, off, or default (follow notify.copy_supervisor in the config)"},
		},
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			var set *bool
			switch v := c.String("copy"); v {
			case "on", "off":
				b := v == "on"
				set = &b
			case "default":
			case "":
				return withCode(exitBadInput, errors.New("notify needs --copy on, off or default; see `walkie notify --help`"))
			default:
				return withCode(exitBadInput, fmt.Errorf("--copy %q: use on, off or default", v))
			}
			_, _, err = walkie.UpdateState(file, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
				s.CopySupervisor = set
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "%s: supervisor copies %s\n", file, map[string]string{"on": "on", "off": "off", "default": "follow the config"}[c.String("copy")])
			return nil
		},
	}
}
