// Package e2e drives the built walkie binary through whole debates with the
// scripted fake agent (cmd/fakeagent): one test per outcome and per control
// (halt, extend, SIGINT, SIGKILL and resume). Each test asserts from what a
// user can see, the exit code, the log and the record itself, and then
// that no process of the run is left.
//
// It lives apart from cmd/walkie so that its TestMain, which builds the
// binaries once, cannot collide with the command package's own tests. What
// it shares with the other black-box suites (realcli, scaleout) is in
// cmd/walkie/internal/blackbox.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
)

// bin holds the walkie and fakeagent binaries built for this test run; it
// is put first on the PATH of every walkie the tests start, and walkie
// passes PATH on to its agents.
var bin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := blackbox.BuildTemp("walkie-e2e-", blackbox.Walkie, blackbox.FakeAgent)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = dir
	// The runs note their debates in the registry of the user's state
	// directory: a scratch one, not the real user's.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	return m.Run()
}
