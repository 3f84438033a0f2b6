package main

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// skillPlace is one folder a CLI reads skills from, at one level (the
// project's, or the user's).
type skillPlace struct {
	cli  string
	user bool
	// root is "." (the project), "~" (HOME) or "$CODEX_HOME" (codex's
	// home: $CODEX_HOME, by default ~/.codex); dir is the folder under it.
	root, dir string
}

// skillPlaces is where the CLIs read skills (measured with claude 2.1.197
// and codex 0.171.0), per CLI and level: the first is where install
// writes the skill. The others are folders walkie wrote to before that
// the CLI still reads: a skill left there would be offered twice, so
// install and remove take walkie's own file out of them. Current Codex
// reads ~/.agents/skills at user level, its own home's skills folder as
// the older place.
var skillPlaces = []skillPlace{
	{cli: "claude", user: false, root: ".", dir: ".claude/skills"},
	{cli: "codex", user: false, root: ".", dir: ".agents/skills"},
	{cli: "claude", user: true, root: "~", dir: ".claude/skills"},
	{cli: "codex", user: true, root: "~", dir: ".agents/skills"},
	{cli: "codex", user: true, root: "$CODEX_HOME", dir: "skills"},
	{cli: "codex", user: true, root: "~", dir: ".codex/skills"}, // $CODEX_HOME's default, whatever it is now
}

// skillPaths are the skill's file in each of a CLI's places at a level,
// install's first, each once.
func skillPaths(cli string, user bool) ([]string, error) {
	var out []string
	for _, p := range skillPlaces {
		if p.cli != cli || p.user != user {
			continue
		}
		root := p.root
		switch {
		case root == "$CODEX_HOME" && os.Getenv("CODEX_HOME") != "":
			root = os.Getenv("CODEX_HOME")
		case root == "$CODEX_HOME":
			continue // the ~/.codex entry stands for it
		case root == "~":
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("find your home directory: %w", err)
			}
			root = home
		}
		path := filepath.Join(root, p.dir, skillName, "SKILL.md")
		if !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	return out, nil
}

func skillFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "claude", Usage: "the Claude Code skill (default: both)"},
		&cli.BoolFlag{Name: "codex", Usage: "the Codex skill (default: both)"},
		&cli.BoolFlag{Name: "project", Usage: "in this directory, for this project only (.claude/skills, .agents/skills)"},
		&cli.BoolFlag{Name: "user", Usage: "in your home, for every project (the default)"},
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

func skillCommand() *cli.Command {
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
		Subcommands: []*cli.Command{skillInstallCommand(), skillRemoveCommand(), skillShowCommand()},
	}
}

func skillInstallCommand() *cli.Command {
	return &cli.Command{
		Name:  "install",
		Usage: "write the skill where the CLIs look for it",
		Flags: skillFlags(),
		Action: func(c *cli.Context) error {
			return eachSkill(c, func(name, path string, older []string) error {
				if err := removeOlderSkills(c, name, older); err != nil {
					return err
				}
				text := renderSkill(name)
				old, err := os.ReadFile(path)
				switch {
				case err == nil && !bytes.Contains(old, []byte(skillMarker)):
					return withCode(exitRefused, fmt.Errorf("%s exists and walkie did not write it: left alone; move it away to install walkie's", path))
				case err == nil && bytes.Equal(old, text):
					fmt.Fprintf(c.App.Writer, "%s skill already installed: %s\n", cliTitle[name], path)
					return nil
				case err != nil && !errors.Is(err, fs.ErrNotExist):
					return err
				}
				if err := walkie.WriteFileAtomic(path, text, 0o644); err != nil {
					return fmt.Errorf("install the %s skill: %w", cliTitle[name], err)
				}
				fmt.Fprintf(c.App.Writer, "%s skill installed: %s (walkie %s)\n", cliTitle[name], path, readBuildVersion().Version)
				return nil
			})
		},
	}
}

func skillRemoveCommand() *cli.Command {
	return &cli.Command{
		Name:  "remove",
		Usage: "remove the skill walkie installed",
		Flags: skillFlags(),
		Action: func(c *cli.Context) error {
			return eachSkill(c, func(name, path string, older []string) error {
				if err := removeOlderSkills(c, name, older); err != nil {
					return err
				}
				old, err := os.ReadFile(path)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					fmt.Fprintf(c.App.Writer, "%s skill not installed at %s\n", cliTitle[name], path)
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
				fmt.Fprintf(c.App.Writer, "%s skill removed: %s\n", cliTitle[name], path)
				return nil
			})
		},
	}
}

// eachSkill calls do with each CLI the flags name, where its skill goes
// and the older places it may be, stopping at the first error.
func eachSkill(c *cli.Context, do func(name, path string, older []string) error) error {
	clis, user, err := skillTargets(c)
	if err != nil {
		return err
	}
	for _, name := range clis {
		paths, err := skillPaths(name, user)
		if err != nil {
			return err
		}
		if err := do(name, paths[0], paths[1:]); err != nil {
			return err
		}
	}
	return nil
}

// removeOlderSkills removes the skill walkie wrote in a CLI's older
// places, and its folder if nothing else is in it; a SKILL.md walkie did
// not write is a person's, and stays.
func removeOlderSkills(c *cli.Context, name string, older []string) error {
	for _, path := range older {
		old, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		case !bytes.Contains(old, []byte(skillMarker)):
			continue
		}
		if err := os.Remove(path); err != nil {
			return err
		}
		_ = os.Remove(filepath.Dir(path))
		fmt.Fprintf(c.App.Writer, "%s skill removed from its older place: %s\n", cliTitle[name], path)
	}
	return nil
}

func skillShowCommand() *cli.Command {
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
			_, err := c.App.Writer.Write(renderSkill(name))
			return err
		},
	}
}
