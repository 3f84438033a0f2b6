package main

import (
	"os"
	"strings"
)

// walkie comes in two builds of this one package (docs/scale-out.md,
// "Install"): the default one does not link the Temporal engine, whose
// packages' initialisation would cost every `walkie post` more than the
// post itself; the one built with -tags temporal links it. The default
// build hands `walkie worker` and `walkie serve --engine temporal` to the
// temporal build, installed beside it as walkie-temporal
// (temporal_handoff.go); the temporal build runs them itself
// (temporal_linked.go). Both define the same commands, flags and help.

const (
	// temporalProgram is the name the temporal build is installed under.
	temporalProgram = "walkie-temporal"
	// handoffEnv carries the handing walkie's version to walkie-temporal,
	// which refuses to run for a walkie of another version.
	handoffEnv = "WALKIE_HANDOFF_VERSION"
)

// handoffVersion is the version both sides of a hand-off compare: the
// first line of `walkie --version`, without its "walkie ".
func handoffVersion() string { return readBuildVersion().Version }

// takeHandoff runs first in main: it removes handoffEnv from the
// environment, so it never reaches an agent or a later hand-off, and if
// this process was handed a command, checks that the two builds match.
func takeHandoff() error {
	from, handed := os.LookupEnv(handoffEnv)
	if !handed {
		return nil
	}
	if err := os.Unsetenv(handoffEnv); err != nil {
		return err
	}
	return acceptHandoff(from)
}

// installHint says how to get walkie-temporal, or one walkie with the
// engine linked in, at this walkie's version.
func installHint() string {
	v := handoffVersion()
	if !strings.HasPrefix(v, "v") || strings.Contains(v, "+") {
		v = "latest" // a build from a checkout names no version go install can fetch
	}
	return "install both walkie and " + temporalProgram + " with `make install` from a checkout of walkie, or one walkie with the engine linked in with `go install -tags temporal github.com/walkie-sh/walkie/cmd/walkie@" + v + "`"
}
