package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/walkie-sh/walkie/config"
)

// didYouMean is "did you mean NAME?" for the one of names nearest to
// typed, when one is near enough to be a slip; "" otherwise. The nearness
// is the config's (config.Suggest), so a misspelt command, flag, key or
// agent is answered by one rule.
func didYouMean(typed string, names []string) string {
	if best := config.Suggest(typed, names); best != "" {
		return fmt.Sprintf("did you mean %s?", best)
	}
	return ""
}

// withHint is msg, the hint if any, and where the help is: "…; did you
// mean init? See `walkie --help`".
func withHint(msg, hint, help string) string {
	if hint == "" {
		return fmt.Sprintf("%s; see `%s --help`", msg, help)
	}
	return fmt.Sprintf("%s; %s See `%s --help`", msg, hint, help)
}

// cmdPath is the command as a person types it: "walkie brief approve".
// (urfave/cli v2's FullName leaves the parents out.)
func cmdPath(c *cli.Context) string {
	var names []string
	for _, x := range c.Lineage() {
		if x.Command != nil && x.Command.Name != "" {
			names = append([]string{x.Command.Name}, names...)
		}
	}
	if len(names) == 0 || names[0] != "walkie" {
		names = append([]string{"walkie"}, names...)
	}
	return strings.Join(names, " ")
}

// commandNames are the names and aliases of the commands a person may
// type (hidden ones are not offered).
func commandNames(cmds []*cli.Command) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden {
			out = append(out, c.Names()...)
		}
	}
	return out
}

// flagNames are a command's flags as typed: --agents, -n.
func flagNames(flags []cli.Flag) []string {
	var out []string
	for _, f := range flags {
		for _, n := range f.Names() {
			if len(n) == 1 {
				out = append(out, "-"+n)
			} else {
				out = append(out, "--"+n)
			}
		}
	}
	return out
}

// unknownFlag is the flag urfave's "flag provided but not defined: -x"
// names, as typed ("--x" when it is longer than a letter); "" for another
// error.
func unknownFlag(err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	if len(name) > 1 {
		return "--" + name
	}
	return "-" + name
}

// groupAction is the action of a command that only groups others (walkie
// brief, walkie thread): its help without an argument, and an argument
// that names none of them is bad input that names the nearest (urfave
// would say "No help topic for 'x'").
func groupAction(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.ShowSubcommandHelp(c)
	}
	typed := c.Args().First()
	return withCode(exitBadInput, errors.New(withHint(fmt.Sprintf("%q is not a command of %s", typed, cmdPath(c)),
		didYouMean(typed, commandNames(c.Command.Subcommands)), cmdPath(c))))
}

// groupsSayWhatIsUnknown gives every command that only groups others
// groupAction, down the tree.
func groupsSayWhatIsUnknown(cmds []*cli.Command) {
	for _, c := range cmds {
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = groupAction
		}
		groupsSayWhatIsUnknown(c.Subcommands)
	}
}

// sayUsage is a flag error as walkie says it: an unknown flag as typed,
// with the nearest of flags, and where the help of cmd is.
func sayUsage(err error, flags []cli.Flag, cmd string) error {
	typed := unknownFlag(err)
	if typed == "" {
		return &usageError{err, withHint(err.Error(), "", cmd)}
	}
	return &usageError{err, withHint("unknown flag "+typed, didYouMean(typed, flagNames(flags)), cmd)}
}

// usageError is a usage error as walkie says it (with its hint and where
// the help is); it still unwraps to what urfave returned.
type usageError struct {
	err error
	msg string
}

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return e.err }
