// Package skills writes and removes the walkie-debate skill where Claude
// Code and Codex look for it, and renders its text, stamped with walkie's
// version. It writes only through real folders: a symbolic link at any
// folder under the project or the home, or in place of SKILL.md, is
// refused, since it could lead anywhere (/etc included); the files it
// touches are opened relative to the folder it has checked, never by a
// path that could be swapped for a link meanwhile.
package skills

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"text/template"
)

// Name is the skill's name, its folder's too.
const Name = "walkie-debate"

// Marker is in every SKILL.md walkie writes: Install replaces and Remove
// removes only such a file, never one a person wrote.
const Marker = "written by walkie skill install"

// file is the skill's file in its folder.
const file = "SKILL.md"

//go:embed SKILL.md.tmpl
var text string

var tmpl = template.Must(template.New("skill").Parse(text))

// CLIs are the CLIs a skill is written for, by flag name.
var CLIs = []string{"claude", "codex"}

// Title is each CLI's name for a person.
var Title = map[string]string{"claude": "Claude Code", "codex": "Codex"}

// Render is the skill's text for a CLI, stamped with walkie's version:
// the skill a binary installs is the one it was built with.
func Render(cli, version string) []byte {
	var b bytes.Buffer
	err := tmpl.Execute(&b, struct{ CLI, Version, Marker string }{cli, version, Marker})
	if err != nil {
		panic("skill template: " + err.Error()) // fixed text and strings: a bug
	}
	return b.Bytes()
}

// Place is where a CLI looks for the skill: the folders Dirs, the last
// the skill's own, under Root (the project, the home, $CODEX_HOME), which
// is taken as it is.
type Place struct {
	Root string
	Dirs []string
}

// Path is the skill's file, as a person reads it.
func (p Place) Path() string {
	return filepath.Join(append(append([]string{p.Root}, p.Dirs...), file)...)
}

// at is the path of the i-th folder (len(Dirs) for the file), for errors.
func (p Place) at(i int) string {
	if i >= len(p.Dirs) {
		return p.Path()
	}
	return filepath.Join(append([]string{p.Root}, p.Dirs[:i+1]...)...)
}

// place is one folder a CLI reads skills from, at one level (the
// project's, or the user's): root is "." (the project), "~" (HOME) or
// "$CODEX_HOME" (codex's home, $CODEX_HOME when set), dirs the folders
// under it.
type place struct {
	cli  string
	user bool
	root string
	dirs []string
}

// places is where the CLIs read skills (measured with claude 2.1.197 and
// codex 0.171.0), per CLI and level: the first is where Install writes
// the skill (Where). The others are folders walkie wrote to before that
// the CLI still reads (Older): a skill left there would be offered twice.
// Current Codex reads ~/.agents/skills at user level, its own home's
// skills folder as the older place.
var places = []place{
	{cli: "claude", user: false, root: ".", dirs: []string{".claude", "skills"}},
	{cli: "codex", user: false, root: ".", dirs: []string{".agents", "skills"}},
	{cli: "claude", user: true, root: "~", dirs: []string{".claude", "skills"}},
	{cli: "codex", user: true, root: "~", dirs: []string{".agents", "skills"}},
	{cli: "codex", user: true, root: "$CODEX_HOME", dirs: []string{"skills"}},
	{cli: "codex", user: true, root: "~", dirs: []string{".codex", "skills"}}, // $CODEX_HOME's default, whatever it is now
}

// all is every place of a CLI at a level, Where's first, each once.
func all(cli string, user bool) ([]Place, error) {
	var out []Place
	for _, p := range places {
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
		pl := Place{Root: root, Dirs: append(append([]string(nil), p.dirs...), Name)}
		if !slices.ContainsFunc(out, func(o Place) bool { return o.Path() == pl.Path() }) {
			out = append(out, pl)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no skill place for %s", cli)
	}
	return out, nil
}

// Where is the place a CLI looks for the skill now, the one Install
// writes.
func Where(cli string, user bool) (Place, error) {
	ps, err := all(cli, user)
	if err != nil {
		return Place{}, err
	}
	return ps[0], nil
}

// Older are the places walkie wrote a CLI's skill to before Where, which
// the CLI still reads: install and remove take walkie's own file out of
// them.
func Older(cli string, user bool) ([]Place, error) {
	ps, err := all(cli, user)
	if err != nil {
		return nil, err
	}
	return ps[1:], nil
}

// ErrNotWalkies is the refusal of a SKILL.md walkie did not write.
var ErrNotWalkies = errors.New("walkie did not write it")

// LinkError is the refusal of a symbolic link on the way to the skill.
type LinkError struct {
	Path, Target string
}

func (e *LinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link (to %s): walkie writes and removes the skill only through real folders, never through a link, which could lead anywhere; remove the link, or put a real folder there",
		e.Path, e.Target)
}

// Result says what Install or Remove found.
type Result int

const (
	Done    Result = iota // installed, or removed
	Already               // the same skill is installed already
	Absent                // nothing to remove
)

// Install writes text as the skill's file at p, in its place whole, over
// an older skill walkie wrote but never over a person's file (wrapped
// ErrNotWalkies), and through no link (*LinkError).
func Install(p Place, text []byte) (Result, error) {
	dir, _, err := openDirs(p, true)
	if err != nil {
		return Done, err
	}
	defer dir.close()
	old, err := dir.read(p)
	switch {
	case err == nil && !bytes.Contains(old, []byte(Marker)):
		return Done, fmt.Errorf("%s exists and %w", p.Path(), ErrNotWalkies)
	case err == nil && bytes.Equal(old, text):
		return Already, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return Done, err
	}
	return Done, dir.write(p, text)
}

// Remove removes the skill's file walkie wrote at p, and its folder if
// nothing else is in it; a person's file (wrapped ErrNotWalkies) and
// anything reached through a link (*LinkError) are left alone.
func Remove(p Place) (Result, error) {
	dir, parent, err := openDirs(p, false)
	if errors.Is(err, os.ErrNotExist) {
		return Absent, nil
	}
	if err != nil {
		return Done, err
	}
	defer dir.close()
	defer parent.close()
	old, err := dir.read(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Absent, nil
	case err != nil:
		return Done, err
	case !bytes.Contains(old, []byte(Marker)):
		return Done, fmt.Errorf("%s %w", p.Path(), ErrNotWalkies)
	}
	if err := dir.remove(file); err != nil {
		return Done, fmt.Errorf("remove %s: %w", p.Path(), err)
	}
	_ = parent.rmdir(p.Dirs[len(p.Dirs)-1]) // only if empty: a person's own files there stay
	return Done, nil
}
