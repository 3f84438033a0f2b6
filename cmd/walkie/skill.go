package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/skills"
)

func skillFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "claude", Usage: "the Claude Code skill (default: both)"},
		&cli.BoolFlag{Name: "codex", Usage: "the Codex skill (default: both)"},
		&cli.BoolFlag{Name: "project", Usage: "in this directory, for this project only (.claude/skills, .agents/skills)"},
		&cli.BoolFlag{Name: "user", Usage: "in your home, for every project (the default)"},
	}
}

// skillOptions are walkie skill install's, remove's and show's: which
// CLIs' skills, and where.
type skillOptions struct {
	IO   *IOStreams
	CLIs []string
	User bool // in the user's home, not the project
}

// skillAction reads skillFlags into skillOptions and runs run.
func skillAction(f *Factory, runF, run func(context.Context, *skillOptions) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		clis, user, err := skillTargets(c)
		if err != nil {
			return err
		}
		return runWith(c.Context, runF, run, &skillOptions{IO: f.IO, CLIs: clis, User: user})
	}
}

// skillTargets reads the flags: which CLIs, and where.
func skillTargets(c *cli.Context) (clis []string, user bool, err error) {
	if c.NArg() > 0 {
		return nil, false, withCode(exitBadInput, fmt.Errorf("skill %s takes no arguments; see `walkie skill %s --help`", c.Command.Name, c.Command.Name))
	}
	if c.Bool("project") && c.Bool("user") {
		return nil, false, withCode(exitBadInput, errors.New("give --project or --user, not both"))
	}
	for _, name := range skills.CLIs {
		if c.Bool(name) {
			clis = append(clis, name)
		}
	}
	if len(clis) == 0 {
		clis = skills.CLIs
	}
	return clis, !c.Bool("project"), nil
}

func skillCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:  "skill",
		Usage: "install the walkie-debate skill, so that Claude Code or Codex can start a debate from inside the chat",
		Description: `The walkie-debate skill teaches the agent you are chatting with to start a
debate: it writes the briefing from the conversation (or distills its own
session log with walkie brief distill), shows it to you and waits for your
approval, creates and approves the debate, runs walkie auto in the
background, and reports the outcome and where the record is when it ends.
Say "let's debate this with codex" and the agent picks it up.

The text ships inside this binary, stamped with its version (walkie skill
show prints it); installing again after an upgrade updates it. Claude Code
reads .claude/skills/walkie-debate/SKILL.md in the project or in ~/.claude;
Codex reads .agents/skills/walkie-debate/SKILL.md in the project or in
your home (~/.agents/skills). A skill walkie wrote before into Codex's
older place ($CODEX_HOME/skills, ~/.codex/skills) is taken out by install
and remove, so Codex does not offer it twice. A SKILL.md walkie did not
write is never replaced or removed.

EXAMPLES:
   walkie skill install                      # both CLIs, for every project
   walkie skill install --claude --project   # this project only
   walkie skill show --codex
   walkie skill remove`,
		Subcommands: []*cli.Command{skillInstallCommand(f, nil), skillRemoveCommand(f, nil), skillShowCommand(f, nil)},
	}
}

func skillInstallCommand(f *Factory, runF func(context.Context, *skillOptions) error) *cli.Command {
	return &cli.Command{
		Name:   "install",
		Usage:  "write the skill where the CLIs look for it",
		Flags:  skillFlags(),
		Action: skillAction(f, runF, skillInstallRun),
	}
}

func skillInstallRun(_ context.Context, o *skillOptions) error {
	return eachSkill(o, func(name string, p skills.Place) error {
		if err := removeOlderSkills(o, name); err != nil {
			return err
		}
		path := p.Path()
		res, err := skills.Install(p, skills.Render(name, readBuildVersion().Version))
		var link *skills.LinkError
		switch {
		case errors.Is(err, skills.ErrNotWalkies):
			return withCode(exitRefused, fmt.Errorf("%s exists and walkie did not write it: left alone; move it away to install walkie's", path))
		case errors.As(err, &link):
			return withCode(exitRefused, err)
		case err != nil:
			return fmt.Errorf("install the %s skill: %w", skills.Title[name], err)
		case res == skills.Already:
			fmt.Fprintf(o.IO.Out, "%s skill already installed: %s\n", skills.Title[name], path)
			return nil
		}
		fmt.Fprintf(o.IO.Out, "%s skill installed: %s (walkie %s)\n", skills.Title[name], path, readBuildVersion().Version)
		return nil
	})
}

func skillRemoveCommand(f *Factory, runF func(context.Context, *skillOptions) error) *cli.Command {
	return &cli.Command{
		Name:   "remove",
		Usage:  "remove the skill walkie installed",
		Flags:  skillFlags(),
		Action: skillAction(f, runF, skillRemoveRun),
	}
}

func skillRemoveRun(_ context.Context, o *skillOptions) error {
	return eachSkill(o, func(name string, p skills.Place) error {
		if err := removeOlderSkills(o, name); err != nil {
			return err
		}
		path := p.Path()
		res, err := skills.Remove(p)
		var link *skills.LinkError
		switch {
		case errors.Is(err, skills.ErrNotWalkies):
			return withCode(exitRefused, fmt.Errorf("%s was not written by walkie: left alone", path))
		case errors.As(err, &link):
			return withCode(exitRefused, err)
		case err != nil:
			return err
		case res == skills.Absent:
			fmt.Fprintf(o.IO.Out, "%s skill not installed at %s\n", skills.Title[name], path)
			return nil
		}
		fmt.Fprintf(o.IO.Out, "%s skill removed: %s\n", skills.Title[name], path)
		return nil
	})
}

// removeOlderSkills takes the skill walkie wrote out of a CLI's older
// places (skills.Older), saying so; a person's SKILL.md there, or one
// reached through a link, stays, without a word: it is not where walkie
// writes.
func removeOlderSkills(o *skillOptions, name string) error {
	older, err := skills.Older(name, o.User)
	if err != nil {
		return err
	}
	for _, p := range older {
		res, err := skills.Remove(p)
		var link *skills.LinkError
		switch {
		case errors.Is(err, skills.ErrNotWalkies), errors.As(err, &link), res == skills.Absent:
		case err != nil:
			return err
		default:
			fmt.Fprintf(o.IO.Out, "%s skill removed from its older place: %s\n", skills.Title[name], p.Path())
		}
	}
	return nil
}

// eachSkill calls do with each CLI the flags name and where its skill
// goes, stopping at the first error.
func eachSkill(o *skillOptions, do func(name string, p skills.Place) error) error {
	for _, name := range o.CLIs {
		p, err := skills.Where(name, o.User)
		if err != nil {
			return err
		}
		if err := do(name, p); err != nil {
			return err
		}
	}
	return nil
}

func skillShowCommand(f *Factory, runF func(context.Context, *skillOptions) error) *cli.Command {
	return &cli.Command{
		Name:  "show",
		Usage: "print the skill's text as install would write it",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "claude", Usage: "the Claude Code skill (the default)"},
			&cli.BoolFlag{Name: "codex", Usage: "the Codex skill"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("claude") == c.Bool("codex") && c.Bool("codex") {
				return withCode(exitBadInput, errors.New("show one skill: --claude or --codex"))
			}
			name := "claude"
			if c.Bool("codex") {
				name = "codex"
			}
			return runWith(c.Context, runF, skillShowRun, &skillOptions{IO: f.IO, CLIs: []string{name}})
		},
	}
}

func skillShowRun(_ context.Context, o *skillOptions) error {
	_, err := o.IO.Out.Write(skills.Render(o.CLIs[0], readBuildVersion().Version))
	return err
}
