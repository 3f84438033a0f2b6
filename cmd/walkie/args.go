package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves a command's flags in front of its arguments, so that
// `walkie post FILE --from codex` works: urfave/cli v2 stops reading flags
// at the first argument, and every example in our docs puts FILE first.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	cmds := app.Commands
	var flags []cli.Flag
	i := 1
	// Walk down the command path (walkie brief approve FILE …).
	for i < len(args) {
		c := findCommand(cmds, args[i])
		if c == nil {
			break
		}
		out = append(out, args[i])
		flags, cmds = c.Flags, c.Subcommands
		i++
	}
	if flags == nil {
		return args
	}
	var fl, pos []string
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			fl = append(fl, a)
			if !strings.Contains(a, "=") && takesValue(flags, strings.TrimLeft(a, "-")) && i+1 < len(args) {
				fl = append(fl, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	out = append(out, fl...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func takesValue(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool
			}
		}
	}
	return false
}
