// Package e2e drives the built walkie binary through whole debates with the
// scripted fake agent (cmd/fakeagent): one test per outcome and per control
// (halt, extend, SIGINT, SIGKILL and resume). Each test asserts from what a
// user can see, the exit code, turns.jsonl and the record itself, and then
// that no process of the run is left.
//
// It lives apart from cmd/walkie so that its TestMain, which builds the
// binaries once, cannot collide with the command package's own tests.
package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// bin holds the walkie and fakeagent binaries built for this test run; it
// is put first on the PATH of every walkie the tests start, and walkie
// passes PATH on to its agents.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "walkie-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	// The runs note their debates in the registry of the user's state
	// directory: a scratch one, not the real user's.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	// walkie is built with the race detector when the tests run with it,
	// so a race in the controller fails a test (a racy binary exits 66).
	builds := [][]string{
		append([]string{"build", "-o", filepath.Join(dir, "walkie")}, append(raceFlags, "github.com/walkie-sh/walkie/cmd/walkie")...),
		{"build", "-o", filepath.Join(dir, "fakeagent"), "github.com/walkie-sh/walkie/cmd/fakeagent"},
	}
	for _, args := range builds {
		cmd := exec.Command("go", args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "go", args, ":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var sourcesOnce sync.Once

// readSources reads every Go source file of the module, once per run, from
// within a test. go test caches a package's result by its test binary and
// the files its tests opened (not TestMain before m.Run); the binaries
// built from source in TestMain are neither, so without this a change to
// the controller would be answered from the cache.
func readSources(t *testing.T) {
	sourcesOnce.Do(func() {
		if err := readTree("../../.."); err != nil {
			t.Fatal(err)
		}
	})
}

func readTree(root string) error {
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !e.IsDir() && (strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum") && !strings.HasSuffix(name, "_test.go") {
			_, err = os.ReadFile(path)
		}
		return err
	})
}
