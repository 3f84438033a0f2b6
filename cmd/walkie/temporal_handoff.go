//go:build !temporal

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
)

// The default build: the Temporal engine is not linked in (handoff.go).

// temporalLinked says whether this build links the engine.
const temporalLinked = false

// handOffToTemporal replaces this process with walkie-temporal, given
// walkie's own arguments and environment: the same pid, so signals,
// service managers and exit codes see walkie-temporal as the walkie they
// started. It returns only the error why it could not, never nil.
func handOffToTemporal(what string) error {
	path, err := findTemporalProgram()
	if err != nil {
		return withCode(exitBadInput, fmt.Errorf("%s needs the Temporal engine, which this walkie is built without, and %w; %s", what, err, installHint()))
	}
	env := append(os.Environ(), handoffEnv+"="+handoffVersion())
	argv := append([]string{path}, os.Args[1:]...)
	if err := syscall.Exec(path, argv, env); err != nil {
		return withCode(exitBadInput, fmt.Errorf("%s: hand off to %s: %w; %s", what, path, err, installHint()))
	}
	return nil // not reached: Exec returns only on failure
}

// findTemporalProgram looks for walkie-temporal beside the running
// walkie (symlinks resolved, so a walkie linked into ~/bin finds the one
// installed with it), then on PATH.
func findTemporalProgram() (string, error) {
	var beside string
	if self, err := os.Executable(); err == nil {
		if self, err = filepath.EvalSymlinks(self); err == nil {
			beside = filepath.Join(filepath.Dir(self), temporalProgram)
			if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
				return beside, nil
			}
		}
	}
	path, err := exec.LookPath(temporalProgram)
	if err == nil {
		return path, nil
	}
	if beside == "" {
		return "", fmt.Errorf("%s is not on PATH", temporalProgram)
	}
	return "", fmt.Errorf("%s is neither beside it (%s) nor on PATH", temporalProgram, beside)
}

// acceptHandoff refuses every hand-off: this build cannot run what it is
// handed, and handing it on would loop.
func acceptHandoff(from string) error {
	self, _ := os.Executable()
	return withCode(exitBadInput, fmt.Errorf("walkie %s handed a Temporal command to %s, which is a walkie built without the Temporal engine (not with -tags temporal); %s", from, cmp.Or(self, "a program"), installHint()))
}

// notLinked is what the engine's entry points say in this build; runWorker
// and runServe hand off before they would be reached.
func notLinked() error {
	return errors.New("the Temporal engine is not linked into this walkie (a bug: the command should have been handed to " + temporalProgram + ")")
}

func runTemporalWorker(context.Context, *workerOptions) error { return notLinked() }

func newHome(context.Context, *serveOptions, *config.Config, *zap.Logger) (remoteHome, error) {
	return nil, notLinked()
}
