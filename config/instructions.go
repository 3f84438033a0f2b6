package config

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// What a session of a preset is told before walkie's prompt. codex
// 0.171.0 sends about 26 KB of its own instructions with every model call
// (how to code in a shared workspace, plans, reviews, formatting: some
// 7,600 tokens), three calls a turn; a role that only reads and writes
// one file needs none of it. Its model_instructions_file replaces them
// (docs/agents.md), so the codex preset gives those roles a short text of
// walkie's instead. The implementer keeps codex's own: it changes code,
// and they are how codex edits (apply_patch) well.

// CodexInstructionsKey is the codex setting (config.toml, -c) naming a
// file whose text replaces codex's built-in model instructions.
const CodexInstructionsKey = "model_instructions_file"

//go:embed instructions/*.md
var instructionTexts embed.FS

// instructionRoles are the roles whose codex sessions get walkie's
// instructions: each reads, and writes one file.
var instructionRoles = []string{RoleDebater, RoleReviewer, RolePhase, RoleDistiller}

// RoleInstructions is the text walkie's instructions file holds for
// role: what every session is told, then the role's task. "" for a role
// that keeps its CLI's own (the implementer).
func RoleInstructions(role string) string {
	if !slices.Contains(instructionRoles, role) {
		return ""
	}
	common, err := instructionTexts.ReadFile("instructions/common.md")
	if err != nil {
		panic(err) // embedded at build time
	}
	own, err := instructionTexts.ReadFile("instructions/" + role + ".md")
	if err != nil {
		panic(err)
	}
	return string(common) + string(own)
}

// WithInstructionsFile is argv (a's command, expanded) with codex told to
// read its model instructions from path, before a trailing prompt as
// presetFlags places its flags.
func (a Agent) WithInstructionsFile(argv []string, path string) []string {
	at := len(argv)
	if n := len(a.Command); n > 0 && a.Command[n-1] == "{prompt}" && at > 0 {
		at--
	}
	return slices.Insert(slices.Clone(argv), at, "-c", CodexInstructionsKey+"="+path)
}

// OwnInstructions reports whether the user chose codex's model
// instructions themselves, which walkie's never override: argv (the
// session's command) sets model_instructions_file or names a profile
// that does, or the config.toml the session's codex loads does (at its
// top level or in its profile). codexHome is CODEX_HOME in the session's
// environment, home the HOME it shares with the user ("" for a private
// one). A config.toml
// that cannot be read or parsed counts as the user's: codex reports it,
// and walkie adds nothing to it.
func (a Agent) OwnInstructions(argv []string, codexHome, home string) bool {
	profile := ""
	for i, arg := range argv {
		if strings.Contains(arg, CodexInstructionsKey) {
			return true
		}
		switch {
		case (arg == "-p" || arg == "--profile") && i+1 < len(argv):
			profile = argv[i+1]
		case strings.HasPrefix(arg, "--profile="):
			profile = strings.TrimPrefix(arg, "--profile=")
		}
	}
	_, text, err := CodexConfigFile(a, codexHome, home)
	if err != nil {
		return true
	}
	var c struct {
		Instructions string `toml:"model_instructions_file"`
		Profile      string `toml:"profile"`
		Profiles     map[string]struct {
			Instructions string `toml:"model_instructions_file"`
		} `toml:"profiles"`
	}
	if err := toml.Unmarshal(text, &c); err != nil {
		return true
	}
	if profile == "" {
		profile = c.Profile
	}
	return c.Instructions != "" || c.Profiles[profile].Instructions != ""
}

// CodexConfigFile returns the text of the config.toml a session of a's
// codex loads, and the name messages give it: codexHome/config.toml when
// the session's CODEX_HOME is set, else the agent's home_files entry for a
// private HOME, else home's .codex/config.toml. No file is no text.
func CodexConfigFile(a Agent, codexHome, home string) (name string, text []byte, err error) {
	var path string
	switch {
	case codexHome != "":
		path = filepath.Join(codexHome, "config.toml")
	case a.Home != HomeInherit:
		return fmt.Sprintf("agents.%s.home_files[.codex/config.toml]", a.Name), []byte(a.HomeFiles[".codex/config.toml"]), nil
	case home != "":
		path = filepath.Join(home, ".codex", "config.toml")
	default:
		return "", nil, nil
	}
	text, err = os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil, nil
	}
	return path, text, err
}
