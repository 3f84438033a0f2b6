package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// hoisted are the global flags a person may put anywhere on the command
// line (`walkie show FILE --color never`): urfave/cli v2 reads global
// flags only before the command.
var hoisted = map[string]bool{"color": true}

// interspersed moves a command's flags in front of its arguments, so that
// `walkie post FILE --from codex` works: urfave/cli v2 stops reading flags
// at the first argument, and every example in our docs puts FILE first.
// Global flags before the command stay there; --color after it moves
// there.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var global, path []string
	cmds := app.Commands
	var flags []cli.Flag
	i := 1
	// Global flags, then the command path (walkie brief approve FILE …).
	for ; i < len(args); i++ {
		a := args[i]
		if isFlag(a) {
			name := flagName(a)
			if !hasFlag(app.Flags, name) || len(path) > 0 {
				break
			}
			global = append(global, a)
			if !strings.Contains(a, "=") && takesValue(app.Flags, name) && i+1 < len(args) {
				global = append(global, args[i+1])
				i++
			}
			continue
		}
		c := findCommand(cmds, a)
		if c == nil {
			break
		}
		path = append(path, a)
		flags, cmds = c.Flags, c.Subcommands
	}
	if len(path) == 0 {
		return args
	}
	var fl, pos []string
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case isFlag(a):
			name, dst, set := flagName(a), &fl, flags
			if !hasFlag(flags, name) && hoisted[name] {
				dst, set = &global, app.Flags
			}
			if fv := fieldsFlag(set, name); fv != nil && !strings.Contains(a, "=") && i+1 < len(args) && fv.takes(args[i+1]) {
				// "--json status,round": the fields, not a FILE.
				a += "=" + args[i+1]
				i++
			}
			*dst = append(*dst, a)
			if !strings.Contains(a, "=") && takesValue(set, name) && i+1 < len(args) {
				*dst = append(*dst, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	out := append([]string{args[0]}, global...)
	out = append(out, path...)
	out = append(out, fl...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}

func isFlag(a string) bool { return strings.HasPrefix(a, "-") && a != "-" && a != "--" }

func flagName(a string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func hasFlag(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return true
			}
		}
	}
	return false
}

func takesValue(flags []cli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, isBool := f.(*cli.BoolFlag)
				return !isBool && fieldsFlag(flags, name) == nil
			}
		}
	}
	return false
}

// fieldsFlag is the --json of flags named name, if it is one
// (jsonFlags): it takes a value only when one is given with it.
func fieldsFlag(flags []cli.Flag, name string) *fieldsValue {
	for _, f := range flags {
		if g, ok := f.(*cli.GenericFlag); ok && slices.Contains(g.Names(), name) {
			fv, _ := g.Value.(*fieldsValue)
			return fv
		}
	}
	return nil
}
