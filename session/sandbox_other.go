//go:build unix && !linux && !darwin

package session

import (
	"fmt"
	"os/exec"
)

// Elsewhere walkie has no sandbox to apply.

const noSandbox = "no sandbox on this system (walkie has Landlock on Linux and Seatbelt on macOS): agents run without a filesystem boundary"

func systemGrants() []grant   { return nil }
func systemSecrets() []string { return nil }

func enclose(level SandboxLevel, p policy, cmd *exec.Cmd) (SandboxReport, func(), error) {
	rep := SandboxReport{Missing: []string{noSandbox}, Left: p.left}
	if level == SandboxRequired {
		return rep, func() {}, fmt.Errorf("%w: %s", ErrNoSandbox, noSandbox)
	}
	return rep, func() {}, nil
}

// SandboxSupport says what boundary this system gives a session.
func SandboxSupport() SandboxReport { return SandboxReport{Missing: []string{noSandbox}} }
