package session

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// On macOS the boundary is a Seatbelt profile (seatbeltProfile) applied by
// sandbox-exec, which executes the agent's command inside it: the pid,
// session and terminal carry over, and every descendant inherits the
// profile. This has not been run on a Mac by walkie's tests; its profile
// text is tested on every platform.

// sandboxExec is the program that applies a profile and runs a command.
const sandboxExec = "/usr/bin/sandbox-exec"

// systemGrants are what every sandboxed session reads on macOS: the
// system's programs, libraries and frameworks, Homebrew's prefix, /etc
// (less systemSecrets) and a few devices. Paths are as the kernel sees
// them: /etc is /private/etc.
func systemGrants() []grant {
	run := accRead | accExec
	// Not /dev/ttys*: the session's own terminal is open already (its
	// standard streams), /dev/tty reaches it again, and the others are
	// the user's: what is typed there is no agent's to read.
	return []grant{
		{"/usr", run}, {"/bin", run}, {"/sbin", run}, {"/System", run}, {"/Library", run}, {"/opt", run},
		{"/private/etc", accRead}, {"/private/var/db/timezone", accRead}, {"/private/var/select", accRead},
		{"/dev/null", accRead | accWrite}, {"/dev/zero", accRead | accWrite}, {"/dev/random", accRead},
		{"/dev/urandom", accRead}, {"/dev/tty", accRead | accWrite | accDev},
	}
}

// systemSecrets are the files of /etc no agent reads.
func systemSecrets() []string {
	out := []string{"/private/etc/master.passwd", "/private/etc/sudoers", "/private/etc/sudoers.d", "/Library/Keychains"}
	if m, err := filepath.Glob("/private/etc/ssh/ssh_host_*_key"); err == nil {
		out = append(out, m...)
	}
	return out
}

// enclose runs cmd under sandbox-exec with the policy's profile.
func enclose(level SandboxLevel, p policy, cmd *exec.Cmd) (rep SandboxReport, release func(), err error) {
	release = func() {}
	rep.Missing, rep.Left = support(), p.left
	if len(rep.Missing) > 0 {
		if level == SandboxRequired {
			return rep, release, fmt.Errorf("%w: %s", ErrNoSandbox, strings.Join(rep.Missing, "; "))
		}
		return rep, release, nil
	}
	profile, left := seatbeltProfile(p)
	rep.Kind, rep.Left = "seatbelt", append(rep.Left, left...)
	cmd.Args = append([]string{sandboxExec, "-p", profile, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = sandboxExec
	return rep, release, nil
}

func support() []string {
	if _, err := os.Stat(sandboxExec); err != nil {
		return []string{sandboxExec + " is not there: agents run without a filesystem boundary"}
	}
	return nil
}

// SandboxSupport says what boundary this system gives a session.
func SandboxSupport() SandboxReport {
	rep := SandboxReport{Missing: support()}
	if len(rep.Missing) == 0 {
		rep.Kind = "seatbelt"
	}
	return rep
}
