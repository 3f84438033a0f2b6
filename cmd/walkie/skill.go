package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"text/template"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/walkie"
)

// skillName is the skill's name, its folder's too.
const skillName = "walkie-debate"

// skillMarker opens every SKILL.md walkie writes: install replaces and
// remove removes only such a file, never one a person wrote.
const skillMarker = "written by walkie skill install"

//go:embed skills/SKILL.md.tmpl
var skillText string

var skillTemplate = template.Must(template.New("skill").Parse(skillText))

// skillCLIs are the CLIs a skill is written for, by flag name.
var skillCLIs = []string{"claude", "codex"}

var cliTitle = map[string]string{"claude": "Claude Code", "codex": "Codex"}

// renderSkill is the skill's text for a CLI, stamped with this binary's
// version: the skill a binary installs is the one it was built with.
func renderSkill(cli string) []byte {
	var b bytes.Buffer
	err := skillTemplate.Execute(&b, struct{ CLI, Version, Marker string }{cli, readBuildVersion().Version, skillMarker})
	if err != nil {
		panic("skill template: " + err.Error()) // fixed text and strings: a bug
	}
	return b.Bytes()
}

// skillPath is where a CLI looks for the skill (measured with claude
// 2.1.197 and codex 0.171.0): Claude Code in .claude/skills of the project
// or of HOME; Codex in .agents/skills of the project, or in its home,
// $CODEX_HOME (default ~/.codex), under skills.
func skillPath(cli string, user bool) (string, error) {
	var root string
	switch {
	case !user && cli == "claude":
		root = ".claude/skills"
	case !user:
		root = ".agents/skills"
	case cli == "codex" && os.Getenv("CODEX_HOME") != "":
		root = filepath.Join(os.Getenv("CODEX_HOME"), "skills")
	default:
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find your home directory: %w", err)
		}
		root = filepath.Join(home, map[string]string{"claude": ".claude", "codex": ".codex"}[cli], "skills")
	}
	return filepath.Join(root, skillName, "SKILL.md"), nil
}

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
	for _, name := range skillCLIs {
		if c.Bool(name) {
			clis = append(clis, name)
		}
	}
	if len(clis) == 0 {
		clis = skillCLIs
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
Codex reads .agents/skills/walkie-debate/SKILL.md in the project, or
$CODEX_HOME/skills (~/.codex/skills). A SKILL.md walkie did not write is
never replaced or removed.

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
	return eachSkill(o, func(name, path string) error {
		text := renderSkill(name)
		old, err := os.ReadFile(path)
		switch {
		case err == nil && !bytes.Contains(old, []byte(skillMarker)):
			return withCode(exitRefused, fmt.Errorf("%s exists and walkie did not write it: left alone; move it away to install walkie's", path))
		case err == nil && bytes.Equal(old, text):
			fmt.Fprintf(o.IO.Out, "%s skill already installed: %s\n", cliTitle[name], path)
			return nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := walkie.WriteFileAtomic(path, text, 0o644); err != nil {
			return fmt.Errorf("install the %s skill: %w", cliTitle[name], err)
		}
		fmt.Fprintf(o.IO.Out, "%s skill installed: %s (walkie %s)\n", cliTitle[name], path, readBuildVersion().Version)
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
	return eachSkill(o, func(name, path string) error {
		old, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(o.IO.Out, "%s skill not installed at %s\n", cliTitle[name], path)
			return nil
		case err != nil:
			return err
		case !bytes.Contains(old, []byte(skillMarker)):
			return withCode(exitRefused, fmt.Errorf("%s was not written by walkie: left alone", path))
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		_ = os.Remove(filepath.Dir(path)) // only if empty: a person's own files there stay
		fmt.Fprintf(o.IO.Out, "%s skill removed: %s\n", cliTitle[name], path)
		return nil
	})
}

// eachSkill calls do with each CLI the flags name and where its skill
// goes, stopping at the first error.
func eachSkill(o *skillOptions, do func(name, path string) error) error {
	for _, name := range o.CLIs {
		path, err := skillPath(name, o.User)
		if err != nil {
			return err
		}
		if err := do(name, path); err != nil {
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
	_, err := o.IO.Out.Write(renderSkill(o.CLIs[0]))
	return err
}
