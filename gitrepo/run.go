package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Every git walkie runs goes through Command (Run, Repo's methods), with
// one policy (docs/review-threads.md, "How walkie runs git"):
//
//   - the environment is built from an allow-list, never inherited whole:
//     walkie's own environment may hold secrets (API keys, CI tokens) no
//     git command needs, and git's location and per-invocation variables
//     (GIT_DIR, GIT_INDEX_FILE, GIT_CONFIG_PARAMETERS, which a hook that
//     runs walkie inherits) would point the command elsewhere;
//   - nothing the repository holds runs as walkie: hooks (core.hooksPath
//     is a directory nobody can put a file in), an fsmonitor, an ssh
//     command or askpass program of the repository's config, the ext::
//     transport. A session in a worktree shares the repository's .git
//     with the user, so whatever it plants there must stay inert;
//   - nobody is asked anything: no terminal prompt, no askpass, no
//     editor, and no controlling terminal for a helper (ssh) to open;
//   - every command is bound to its context: cancelled, its whole process
//     group is killed, and what it left holding its pipes is not waited
//     for past a short delay.

// HooksVar, set to 1 in walkie's environment, lets the repository's hooks
// run for the git walkie runs: the one part of the policy a person may
// lift, for a repository whose hooks they trust and need (a
// reference-transaction hook that mirrors refs, say).
const HooksVar = "WALKIE_GIT_HOOKS"

// inheritedVars are the variables of walkie's environment a git command
// sees. HOME and XDG_CONFIG_HOME (and GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM
// and GIT_CONFIG_NOSYSTEM, which only a person sets) choose the user's own
// configuration files, so the user's identity, credential helpers and
// safe.directory still apply; the identity variables name who commits;
// the ssh agent, GIT_SSH_COMMAND, proxies and CA files let a worker fetch
// from its origin. Nothing else: not git's variables that git sets for the
// hooks it runs, not a secret.
var inheritedVars = []string{
	"PATH", "HOME", "XDG_CONFIG_HOME", "USER", "LOGNAME", "TMPDIR", "TZ",
	"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL",
	"GIT_SSH_COMMAND", "SSH_AUTH_SOCK",
	"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// fixedEnv is set on every command whatever walkie's environment says.
var fixedEnv = []string{
	"GIT_TERMINAL_PROMPT=0", // never ask for credentials
	"GIT_ASKPASS=",          // empty: no askpass, not core.askPass, not SSH_ASKPASS
	"SSH_ASKPASS_REQUIRE=never",
	"GIT_EDITOR=true",
	"LC_ALL=C", // messages walkie quotes read the same everywhere
}

// Environment is the environment every git walkie runs starts from: the
// allow-listed variables of walkie's own, then the fixed settings.
func Environment() []string {
	var env []string
	for _, k := range inheritedVars {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, fixedEnv...)
}

// policyArgs are the -c settings every command runs with, ahead of its
// own arguments: on the command line they win over every configuration
// file, the repository's included.
func policyArgs() []string {
	args := []string{
		"-c", "core.fsmonitor=false",
		// GIT_SSH_COMMAND, when the user sets it, still wins.
		"-c", "core.sshCommand=ssh -o BatchMode=yes",
		"-c", "protocol.ext.allow=never",
	}
	if os.Getenv(HooksVar) != "1" {
		// os.DevNull is not a directory, so no hook is ever found under
		// it: stronger than an empty directory, which a session could
		// fill.
		args = append(args, "-c", "core.hooksPath="+os.DevNull)
	}
	return args
}

// waitDelay bounds how long a cancelled command's pipes are waited for:
// a helper git started may hold them after git is gone.
const waitDelay = 2 * time.Second

// Command is git run in dir with walkie's policy, ready to start: extra
// is added to the environment (walkie's own settings for this call, such
// as a private index); the caller sets the standard streams.
func Command(ctx context.Context, dir string, extra []string, args ...string) *exec.Cmd {
	all := append(policyArgs(), "-C", dir)
	cmd := exec.CommandContext(ctx, "git", append(all, args...)...)
	cmd.Env = append(Environment(), extra...)
	// A session of its own: no controlling terminal for anything git
	// starts to prompt on, and one process group to kill.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay
	return cmd
}

// Run runs git in dir with walkie's policy and returns its standard
// output; a command that fails is a *GitError with what git said.
func Run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return run(ctx, dir, nil, nil, args...)
}

func run(ctx context.Context, dir string, env []string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := Command(ctx, dir, env, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &GitError{Args: args, Err: err, Stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

// GitError is a git command that failed, with what it said.
type GitError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		return fmt.Sprintf("git %s: %v", strings.Join(e.Args, " "), e.Err)
	}
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// ExitCode is the exit code of a git that ran and failed, or -1 (for no
// error, and for a git that did not run to an exit).
func ExitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
