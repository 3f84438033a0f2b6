//go:build linux

// Package realcli runs the built walkie with the real claude, codex and
// gemini CLIs as its agents: whole debates, every failure class the
// presets classify, the budget stop, walkie doctor, and no process left
// behind. Each CLI runs exactly as its built-in preset starts it, pointed
// at the fake model server (cmd/fakemodel) only through settings the CLI
// supports and a user could write into walkie.yaml: env: and home_files:.
// No CLI is patched. The "model" answers each request from what the CLI
// sent: the prompt names the turn, and the turn is appended by the CLI's
// own tool (claude's and codex's shell, gemini's edit tool). Only the
// untrusted-folder tests change a preset's command: they drop the flag a
// user might forget.
//
// The CLIs are the pinned versions scripts/install-clis.sh puts in
// .cache/clis; without them every test here skips and says so (make test
// runs the script first), or fails when CI is set. REALCLI_KEEP=1 keeps each debate's directory
// (its transcripts, its log) in $TMPDIR for a look afterwards.
package realcli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

var (
	// clis is the folder holding the real CLIs; skip, when set, is why
	// the tests cannot run.
	clis, skip string
	// bin holds the walkie binary built for this run.
	bin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	clis = filepath.Join(root, ".cache", "clis", "node_modules", ".bin")
	for _, name := range []string{"claude", "codex", "gemini"} {
		if _, err := os.Stat(filepath.Join(clis, name)); err != nil {
			skip = fmt.Sprintf("the real agent CLIs are not installed (%s missing): run scripts/install-clis.sh, which puts the pinned claude, codex and gemini into .cache/clis (make test runs it first)", filepath.Join(clis, name))
			return m.Run()
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		skip = "node is not on PATH: the codex and gemini CLIs need Node.js 20 or later"
		return m.Run()
	}
	dir, err := blackbox.BuildTemp("walkie-realcli-", blackbox.Walkie)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "walkie")
	return m.Run()
}

// need skips the test when the CLIs cannot run, saying why and how to fix
// it (in CI, where they are installed first, it fails instead: a missing
// CLI there is a broken setup, not a pass), and otherwise makes go test's
// cache depend on walkie's sources and the CLIs' package files: walkie is
// built in TestMain, which the cache does not see.
func need(t testing.TB) {
	t.Helper()
	if skip != "" {
		sessiontest.Need(t, errors.New(skip))
	}
	blackbox.ReadSources(t)
	for _, pkg := range []string{"@anthropic-ai/claude-code", "@openai/codex", "@google/gemini-cli"} {
		if _, err := os.ReadFile(filepath.Join(clis, "..", pkg, "package.json")); err != nil {
			t.Fatal(err)
		}
	}
}
