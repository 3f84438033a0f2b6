package main

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// personOnly are the commands only a person may run, by their path under
// walkie: each lifts a cap, a stop or an approval the agents work under
// (an agent that extended its own debate ran 965 turns on a 2-round cap),
// or speaks as the supervisor. Run from inside a session walkie started,
// they refuse (docs/sessions.md, "What an agent may run"). when, if set,
// narrows the refusal to the uses that are the person's (post is an
// agent's too; a supervisor's post is not).
var personOnly = map[string]func(*cli.Context) bool{
	"extend":        nil,
	"resume":        nil,
	"brief approve": nil,
	"phase approve": nil,
	"phase redo":    nil,
	"notify":        nil,
	"post":          func(c *cli.Context) bool { return c.Bool("supervisor") },
}

// guardPersonOnly makes the person-only commands among cmds refuse inside
// an agent's session, and say so when the sandbox keeps walkie's state out
// of their reach.
func guardPersonOnly(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		path := strings.TrimSpace(parent + " " + c.Name)
		guardPersonOnly(c.Subcommands, path)
		when, ok := personOnly[path]
		if !ok || c.Action == nil {
			continue
		}
		action := c.Action
		c.Action = func(ctx *cli.Context) error {
			if when == nil || when(ctx) {
				if in, why := session.Inside(); in {
					return &walkie.RefusedError{Op: path, Reason: "run from inside an agent's session (" + why + "): only a person may " + personWhat(path)}
				}
			}
			err := action(ctx)
			if errors.Is(err, fs.ErrPermission) && (when == nil || when(ctx)) {
				// What a sandboxed agent meets when it sheds the markers
				// above: walkie's state is out of its reach.
				return &walkie.RefusedError{Op: path, Reason: "the debate's state cannot be changed from here (" + err.Error() + "); inside an agent's sandbox walkie's state is out of reach, and only a person may " + personWhat(path)}
			}
			return err
		}
	}
}

func personWhat(path string) string {
	switch path {
	case "extend":
		return "raise a debate's round cap"
	case "resume":
		return "lift a halt or a stop"
	case "brief approve", "phase approve":
		return "approve what the agents work to"
	case "phase redo":
		return "throw a phase's file away"
	case "notify":
		return "change who is told of a debate"
	}
	return "post as the supervisor"
}
