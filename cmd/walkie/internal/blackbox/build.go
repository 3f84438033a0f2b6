// Package blackbox is what the black-box test suites of cmd/walkie (e2e,
// realcli, scaleout) share. Each of them drives built binaries the way a
// user does and asserts only what a user can see; this package builds
// those binaries once per run, makes go test's cache see the sources they
// are built from, starts and waits for the walkie commands a test runs,
// finds every process a run left behind by a marker in its environment,
// writes the test's walkie.yaml, and reads what the run leaves on disk:
// the log by its documented field names, the state, walkie status
// --json and the record's turn count.
//
// The suites keep what is their own: the fixture of a debate (e2e's
// debate, realcli's fixture with its fake model server, scaleout's
// cluster with its Temporal server) and its vocabulary, whose methods
// bind the fixture's directory and environment to the functions here.
package blackbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binary is a program a suite builds from this module for its run.
type Binary int

const (
	// Walkie is walkie as it is installed: the default build, which
	// hands serve --engine temporal and worker to walkie-temporal beside
	// it.
	Walkie Binary = iota
	// WalkieTemporal is walkie built with the Temporal engine linked in.
	WalkieTemporal
	// FakeAgent is the scripted fake agent (cmd/fakeagent).
	FakeAgent
)

// goBuild is the go build command line of b, writing into dir. walkie is
// built with the race detector when the tests run with it, so that a
// race in the controller fails a test (a racy binary exits 66); the fake
// agent stands for an outside program and never is.
func (b Binary) goBuild(dir string) []string {
	const walkiePkg = "github.com/walkie-sh/walkie/cmd/walkie"
	var race []string
	if raceEnabled {
		race = []string{"-race"}
	}
	switch b {
	case Walkie:
		return append(append([]string{"build", "-o", filepath.Join(dir, "walkie")}, race...), walkiePkg)
	case WalkieTemporal:
		return append(append([]string{"build", "-tags", "temporal", "-o", filepath.Join(dir, "walkie-temporal")}, race...), walkiePkg)
	}
	return []string{"build", "-o", filepath.Join(dir, "fakeagent"), "github.com/walkie-sh/walkie/cmd/fakeagent"}
}

// Build builds bins into dir, the compiler's output going to stderr.
func Build(dir string, bins ...Binary) error {
	for _, b := range bins {
		args := b.goBuild(dir)
		cmd := exec.Command("go", args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
		}
	}
	return nil
}

// BuildTemp builds bins into a new temporary directory named after
// prefix and returns it; the caller removes it when its tests are done.
// It is meant for TestMain, which has no testing.TB to clean up after.
func BuildTemp(prefix string, bins ...Binary) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := Build(dir, bins...); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
