package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Walkie's instructions for a codex session (config.RoleInstructions) are
// a file codex reads as it starts. It lives in walkie's cache
// ($XDG_CACHE_HOME/walkie/instructions, else ~/.cache/...), which no
// sandboxed session may write (a private HOME is elsewhere; home: inherit
// grants only ~/.codex), and each session is granted that one file to
// read. Its name is its text's hash, and before every session walkie
// checks that the file holds that text, or writes it anew: a file someone
// else put there, or changed, is never what a session is given.

// withInstructions is spec with a's instructions given to its CLI, unless
// the user chose the CLI's instructions themselves (config.OwnInstructions)
// or a has none: the file written, its path on the command line, and read
// granted in the sandbox (reach).
func withInstructions(spec session.Spec, a config.Agent, reach *session.Reach) (session.Spec, error) {
	if a.Instructions == "" {
		return spec, nil
	}
	home := ""
	if a.Home == config.HomeInherit {
		home, _ = os.UserHomeDir()
	}
	codexHome := session.EnvValue(session.Environ(spec, os.Environ()), "CODEX_HOME")
	if a.OwnInstructions(spec.Argv, codexHome, home) {
		return spec, nil
	}
	path, err := instructionsFile(a.Instructions)
	if err != nil {
		return spec, err
	}
	spec.Argv = a.WithInstructionsFile(spec.Argv, path)
	reach.Read = append(slices.Clone(reach.Read), path)
	return spec, nil
}

// instructionsFile is the path of the file in walkie's cache holding
// text, written (whole, through a rename) unless it already holds it.
func instructionsFile(text string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("instructions file: %w", err)
	}
	dir := filepath.Join(cache, "walkie", "instructions")
	sum := sha256.Sum256([]byte(text))
	path := filepath.Join(dir, "codex-"+hex.EncodeToString(sum[:8])+".md")
	// Lstat: a symlink, even to the right text, is someone else's file.
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() {
		if b, err := os.ReadFile(path); err == nil && string(b) == text {
			return path, nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("instructions file: %w", err)
	}
	if err := walkie.ReplaceUnsynced(path, []byte(text), 0o444); err != nil {
		return "", fmt.Errorf("instructions file %s: %w", path, err)
	}
	return path, nil
}
