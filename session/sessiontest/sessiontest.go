// Package sessiontest holds what the tests of code that starts agent
// sessions share: a bounded wait for a condition, the rule for a missing
// component (skip on a laptop, fail in CI), and the pinned real agent CLIs
// that scripts/install-clis.sh installs.
package sessiontest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// pollEvery is how often WaitFor looks: often enough that a test does not
// sleep past its condition, rarely enough not to load the machine.
const pollEvery = 5 * time.Millisecond

// ciSlack multiplies every WaitFor limit in CI. A limit is how long a
// test waits for what must happen, never a speed target (those live in
// benchmarks), and a CI machine runs every package at once under the race
// detector: a limit that holds on a laptop must not fail a run there.
const ciSlack = 3

// WaitFor waits until cond holds, looking every few milliseconds, and
// fails the test naming what it waited for when limit (ciSlack times it in
// CI) passes first. Tests wait on conditions, never for fixed times: these
// machines are shared.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	if InCI() {
		limit *= ciSlack
	}
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: still not %s", limit, what)
		}
		time.Sleep(pollEvery)
	}
}

// InCI reports whether the tests run in CI (CI is set), where a missing
// component is a failed run: a green run must not hide a missing install.
func InCI() bool { return os.Getenv("CI") != "" }

// Need skips the test, saying why, when a component it needs is missing
// (err is not nil), and fails it instead in CI.
func Need(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if InCI() {
		t.Fatalf("CI is set and a component this test needs is missing: %v", err)
	}
	t.Skip(err)
}

// Root is the repository's root: the nearest directory above the test's
// own that holds go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// CLIDir is where scripts/install-clis.sh puts the pinned CLIs' binaries.
func CLIDir(t testing.TB) string {
	return filepath.Join(Root(t), ".cache", "clis", "node_modules", ".bin")
}

// RealCLI returns the pinned real agent CLI (claude, codex, gemini), or
// skips the test saying how to install it (fails it in CI).
func RealCLI(t testing.TB, name string) string {
	t.Helper()
	bin := filepath.Join(CLIDir(t), name)
	if _, err := os.Stat(bin); err != nil {
		Need(t, &missing{"the real " + name + " CLI is not installed (" + bin + " missing): run scripts/install-clis.sh, which installs the pinned claude, codex and gemini from npm (make test runs it first)"})
	}
	if _, err := exec.LookPath("node"); err != nil {
		Need(t, &missing{"node is not on PATH: the " + name + " CLI needs Node.js 20 or later"})
	}
	return bin
}

// Tool returns the path of a program a test needs from the machine (git,
// python3, tmux), or skips the test saying so (fails it in CI).
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Need(t, &missing{name + " is not installed: " + err.Error()})
	}
	return p
}

type missing struct{ why string }

func (m *missing) Error() string { return m.why }
