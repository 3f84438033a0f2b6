// Package gittest makes real git repositories for tests: a temporary work
// tree with an identity of its own and none of the machine's git
// configuration, and helpers to commit in it and read it.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// Isolate makes every git the test runs (and every process it starts
// that runs git) read no configuration of the machine's, and commit as a
// fixed identity. It calls t.Setenv, so the test cannot be parallel.
func Isolate(t testing.TB) {
	t.Helper()
	sessiontest.Tool(t, "git")
	for k, v := range Env() {
		t.Setenv(k, v)
	}
}

// Env is the environment Isolate sets, for a test that passes an
// environment to a process of its own.
func Env() map[string]string {
	return map[string]string{
		"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Tess Ter", "GIT_AUTHOR_EMAIL": "tess@example.com",
		"GIT_COMMITTER_NAME": "Tess Ter", "GIT_COMMITTER_EMAIL": "tess@example.com",
	}
}

// Init makes a repository in a new temporary directory with one commit
// on main holding README.md, and returns its directory.
func Init(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	// The directory's links resolved: git reports the top that way.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "--quiet", "--initial-branch=main")
	Commit(t, dir, "README.md", "hello\n", "first")
	return dir
}

// Git runs git in dir and returns its output, trimmed; a failure fails
// the test.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Commit writes file (relative to dir) and commits it with msg; it
// returns the new commit's full sha.
func Commit(t testing.TB, dir, file, content, msg string) string {
	t.Helper()
	path := filepath.Join(dir, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", "--", file)
	Git(t, dir, "commit", "--quiet", "-m", msg)
	return Git(t, dir, "rev-parse", "HEAD")
}
