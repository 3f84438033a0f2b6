package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/skills"
)

func skillFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "claude", Usage: "Claude Code: its skill, and walkie mcp in its MCP servers (default: every CLI)"},
		&cli.BoolFlag{Name: "codex", Usage: "Codex: its skill, and walkie mcp in its MCP servers (default: every CLI)"},
		&cli.BoolFlag{Name: "gemini", Usage: "Gemini CLI: walkie mcp in its MCP servers (it has no skill) (default: every CLI)"},
		&cli.BoolFlag{Name: "mcp", Value: true, Usage: "register (or unregister) walkie mcp with the CLIs' MCP servers; --mcp=false for the skills alone"},
		&cli.BoolFlag{Name: "project", Usage: "in this directory, for this project only (.claude/skills, .agents/skills, .mcp.json, .codex/config.toml, .gemini/settings.json)"},
		&cli.BoolFlag{Name: "user", Usage: "in your home, for every project (the default)"},
	}
}

// skillOptions are walkie skill install's, remove's and show's: which
// CLIs' skills and MCP registrations, and where.
type skillOptions struct {
	IO    *IOStreams
	CLIs  []string // the skills: claude, codex
	Hosts []string // the MCP registrations: claude, codex, gemini
	User  bool     // in the user's home, not the project
}

// skillAction reads skillFlags into skillOptions and runs run.
func skillAction(f *Factory, runF, run func(context.Context, *skillOptions) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		o, err := skillTargets(c)
		if err != nil {
			return err
		}
		o.IO = f.IO
		return runWith(c.Context, runF, run, o)
	}
}

// skillTargets reads the flags: which CLIs, which MCP hosts, and where.
func skillTargets(c *cli.Context) (*skillOptions, error) {
	if c.NArg() > 0 {
		return nil, withCode(exitBadInput, fmt.Errorf("skill %s takes no arguments; see `walkie skill %s --help`", c.Command.Name, c.Command.Name))
	}
	if c.Bool("project") && c.Bool("user") {
		return nil, withCode(exitBadInput, errors.New("give --project or --user, not both"))
	}
	o := &skillOptions{User: !c.Bool("project")}
	for _, name := range skills.Hosts {
		if !c.Bool(name) {
			continue
		}
		o.Hosts = append(o.Hosts, name)
		if slices.Contains(skills.CLIs, name) {
			o.CLIs = append(o.CLIs, name)
		}
	}
	if len(o.Hosts) == 0 {
		o.CLIs, o.Hosts = skills.CLIs, skills.Hosts
	}
	if !c.Bool("mcp") {
		o.Hosts = nil
	}
	return o, nil
}

func skillCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:  "skill",
		Usage: "install the walkie-debate skill and register walkie mcp, so that Claude Code, Codex or Gemini CLI can start and follow a debate from inside the chat",
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

install also registers walkie mcp (the MCP server: walkie mcp --help) where
each CLI looks for MCP servers, and remove unregisters it: Claude Code in
~/.claude.json (--project: .mcp.json, which Claude Code asks you to trust
once), Codex in $CODEX_HOME/config.toml (~/.codex/config.toml; --project:
.codex/config.toml, read in a trusted project), Gemini CLI in
~/.gemini/settings.json (--project: .gemini/settings.json). Only walkie's
own entry (walkie, mcp) is added or taken out; the rest of each file stays
as it was, and an entry named walkie that walkie did not write is left
alone (exit 3). A project's file is written only as a real file, never
through a link. --mcp=false leaves the MCP servers alone.

EXAMPLES:
   walkie skill install                      # every CLI, for every project
   walkie skill install --claude --project   # this project only
   walkie skill install --gemini             # walkie mcp for Gemini CLI
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
	err := eachSkill(o, func(name string, p skills.Place) error {
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
	if err != nil {
		return err
	}
	return eachHost(o, func(r skills.Registration) error {
		res, err := skills.Register(r)
		if err := hostRefusal(r, err); err != nil {
			return err
		}
		if res == skills.Already {
			fmt.Fprintf(o.IO.Out, "%s: walkie mcp already registered in %s\n", skills.HostTitle[r.Host], r.Path)
			return nil
		}
		fmt.Fprintf(o.IO.Out, "%s: walkie mcp registered in %s\n", skills.HostTitle[r.Host], r.Path)
		return nil
	})
}

// hostRefusal is the exit code of a registration walkie would not make or
// undo: a person's entry or a link is refused (exit 3), a file the host
// would not read is bad input.
func hostRefusal(r skills.Registration, err error) error {
	var link *skills.LinkError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, skills.ErrNotOurs), errors.As(err, &link):
		return withCode(exitRefused, err)
	}
	return withCode(exitBadInput, fmt.Errorf("register walkie mcp with %s: %w", skills.HostTitle[r.Host], err))
}

// eachHost calls do with each MCP host the flags name and its file,
// stopping at the first error.
func eachHost(o *skillOptions, do func(r skills.Registration) error) error {
	for _, host := range o.Hosts {
		r, err := skills.Registered(host, o.User)
		if err != nil {
			return err
		}
		if err := do(r); err != nil {
			return err
		}
	}
	return nil
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
	err := eachSkill(o, func(name string, p skills.Place) error {
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
	if err != nil {
		return err
	}
	return eachHost(o, func(r skills.Registration) error {
		res, err := skills.Unregister(r)
		if err := hostRefusal(r, err); err != nil {
			return err
		}
		if res == skills.Absent {
			fmt.Fprintf(o.IO.Out, "%s: walkie mcp not registered in %s\n", skills.HostTitle[r.Host], r.Path)
			return nil
		}
		fmt.Fprintf(o.IO.Out, "%s: walkie mcp unregistered from %s\n", skills.HostTitle[r.Host], r.Path)
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
