package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// plant makes every hook in hooks (and an fsmonitor in the repository's
// config) append its name to the returned marker file: the programs a
// hostile session in a worktree could leave in the shared .git.
func plant(t *testing.T, dir string, hooks ...string) string {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "ran")
	hookDir := filepath.Join(dir, ".git", "hooks")
	must(t, os.MkdirAll(hookDir, 0o755))
	for _, h := range append(hooks, "fsmonitor") {
		script := "#!/bin/sh\necho " + h + " >> '" + marker + "'\n"
		must(t, os.WriteFile(filepath.Join(hookDir, h), []byte(script), 0o755))
	}
	gittest.Git(t, dir, "config", "core.fsmonitor", filepath.Join(hookDir, "fsmonitor"))
	gittest.Git(t, dir, "config", "core.sshCommand", filepath.Join(hookDir, "fsmonitor"))
	return marker
}

// Nothing the repository holds runs as walkie: hooks, whatever git
// operation walkie makes (a worktree, a branch, the record's commits), and
// an fsmonitor of the repository's config.
func TestRepositoryProgramsNeverRun(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	marker := plant(t, dir, "post-checkout", "reference-transaction", "pre-commit", "post-commit", "post-index-change", "pre-auto-gc")
	r, err := Open(ctx, dir)
	must(t, err)
	start, err := r.Commit(ctx, "HEAD")
	must(t, err)
	wt := filepath.Join(t.TempDir(), "wt")
	must(t, r.AddWorktree(ctx, wt, "walkie/d/turn-1", start))
	must(t, r.RemoveWorktree(ctx, wt))
	must(t, r.SetBranch(ctx, "walkie/d/turn-2", start))
	must(t, r.DeleteBranch(ctx, "walkie/d/turn-2"))
	file := newRecord(t, dir)
	post(t, file, walkie.Post{From: "builder", Body: []byte("Please review.\n")})
	if _, err := CommitEntries(ctx, file); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, dir, "status", "--porcelain"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("the repository's programs ran as walkie:\n%s", b)
	}
	// The person may ask for the hooks.
	t.Setenv(HooksVar, "1")
	must(t, r.SetBranch(ctx, "walkie/d/turn-3", start))
	if b, _ := os.ReadFile(marker); !strings.Contains(string(b), "reference-transaction") {
		t.Fatalf("with %s=1 the hooks did not run: %q", HooksVar, b)
	}
}

// envOf is the environment a program git starts sees, when walkie runs
// git (an alias given on the command line runs one).
func envOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "env")
	if _, err := Run(ctx, dir, "-c", "alias.dump=!env > '"+out+"'", "dump"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	must(t, err)
	env := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	return env
}

// git sees walkie's allow-listed variables, never a secret of walkie's
// environment, never the variables a hook running walkie inherits, and
// always the settings that keep it from asking anyone anything.
func TestEnvironment(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("ANTHROPIC_API_KEY", "sk-secret")
	t.Setenv("GITHUB_TOKEN", "ghp-secret")
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "elsewhere"))
	t.Setenv("GIT_INDEX_FILE", filepath.Join(t.TempDir(), "index"))
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/planted'")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
	t.Setenv("GIT_CONFIG_VALUE_0", "/planted")
	t.Setenv("GIT_ASKPASS", "/planted/askpass")
	t.Setenv("SSH_ASKPASS", "/planted/askpass")
	env := envOf(t, dir)
	for _, k := range []string{"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "GIT_INDEX_FILE", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "SSH_ASKPASS"} {
		if v, ok := env[k]; ok {
			t.Errorf("git's programs see %s=%s", k, v)
		}
	}
	if strings.Contains(env["GIT_CONFIG_PARAMETERS"], "planted") || env["GIT_DIR"] == os.Getenv("GIT_DIR") {
		t.Errorf("an inherited variable redirects git: GIT_CONFIG_PARAMETERS=%q GIT_DIR=%q", env["GIT_CONFIG_PARAMETERS"], env["GIT_DIR"])
	}
	for k, want := range map[string]string{"HOME": home, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "GIT_AUTHOR_NAME": "Tess Ter", "LC_ALL": "C"} {
		if got, ok := env[k]; !ok || got != want {
			t.Errorf("%s=%q (set: %v), want %q", k, got, ok, want)
		}
	}
	if !strings.Contains(env["GIT_CONFIG_PARAMETERS"], "'core.hooksPath'='"+os.DevNull+"'") {
		t.Errorf("the policy's settings are not in force: GIT_CONFIG_PARAMETERS=%q", env["GIT_CONFIG_PARAMETERS"])
	}
}

// Nothing git starts has a terminal to prompt on, even when walkie runs
// in one.
func TestNoTerminal(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	out, err := Run(ctx, dir, "-c", "alias.tty=!(exec 3</dev/tty) 2>/dev/null && echo terminal || echo none", "tty")
	must(t, err)
	if got := strings.TrimSpace(string(out)); got != "none" {
		t.Fatalf("git's programs could open a terminal: %q", got)
	}
}

// A cancelled command ends with everything it started: git, and what it
// ran that would outlive it.
func TestCancelEndsTheGroup(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(cctx, dir, "-c", "alias.linger=!sh -c 'echo $$ > "+pidFile+"; exec sleep 600'", "linger")
		done <- err
	}()
	var pid int
	sessiontest.WaitFor(t, 10*time.Second, "the lingering child started", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled git reported success")
	}
	sessiontest.WaitFor(t, 10*time.Second, "the child is gone", func() bool {
		return !alive(pid)
	})
}

// alive reports whether pid runs: not gone, not a zombie waiting for
// init to reap it.
func alive(pid int) bool {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		i := bytes.LastIndexByte(b, ')')
		return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
