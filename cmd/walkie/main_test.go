package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/walkie-sh/walkie/walkie"
)

// walkieBin is a walkie binary built once for this test binary, for the
// tests that run many real processes at once (built without -race, so
// hundreds of them stay cheap). The scripts instead run the test binary
// itself as walkie (testscript.Main), so their runs count for coverage
// and the race detector.
var walkieBin string

func TestMain(m *testing.M) {
	testscript.Main(buildFirst{m}, map[string]func(){
		"walkie": func() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// buildFirst builds walkieBin before the tests run. testscript.Main calls
// Run only in the top-level test process, never when the binary runs as
// walkie, so the build happens once.
type buildFirst struct{ m *testing.M }

func (b buildFirst) Run() int {
	dir, err := os.MkdirTemp("", "walkie-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	walkieBin = filepath.Join(dir, "walkie")
	if out, err := exec.Command("go", "build", "-o", walkieBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build walkie: %v\n%s", err, out)
		return 1
	}
	return b.m.Run()
}

// recordScripts are the scenarios of the record commands, one per file.
// (brief_*.txtar belong to brief_test.go, which sets up their own PATH.)
var recordScripts = []string{"init", "post", "status", "verify", "halt", "resume", "extend", "repair", "help", "usage", "notify", "doctor", "version", "show", "skill", "worker", "thread", "read", "gate", "escapes", "suggest", "completion", "json", "people"}

func TestRecordScripts(t *testing.T) {
	var files []string
	for _, p := range recordScripts {
		m, err := filepath.Glob("testdata/script/" + p + "*.txtar")
		if err != nil || len(m) == 0 {
			t.Fatalf("no script for %s (%v)", p, err)
		}
		files = append(files, m...)
	}
	testscript.Run(t, testscript.Params{
		Files:               files,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			// Under -race, walkie here is the race-built test binary, and
			// the race runtime sleeps a second at every exit unless told
			// not to: that second per command was most of the suite's time.
			env.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"exits": cmdExits, "gitsha": cmdGitSHA, "state": cmdState},
		Condition: func(cond string) (bool, error) {
			if cond == "temporal" {
				return temporalLinked, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// cmdGitSHA sets an environment variable to what git rev-parse prints in
// the script's directory: `gitsha abc --short HEAD`, then `$abc`. Review
// threads cite commits the script makes as it goes.
func cmdGitSHA(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: gitsha VAR rev-parse-args...")
	}
	cmd := exec.Command("git", append([]string{"rev-parse"}, args[1:]...)...)
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = append(os.Environ(), "HOME="+ts.Getenv("HOME"))
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("git rev-parse %s: %v", strings.Join(args[1:], " "), err)
	}
	ts.Setenv(args[0], strings.TrimSpace(string(out)))
}

// cmdState prints the control state of the debate whose state directory
// is given, as its log folds it, indented JSON for the stdout command:
// `state .walkie/d`, then `stdout '"extra_rounds": 2'`.
func cmdState(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: state STATEDIR")
	}
	st, err := walkie.LoadState(ts.MkAbs(args[0]))
	ts.Check(err)
	b, err := json.MarshalIndent(st, "", "  ")
	ts.Check(err)
	ts.Stdout().Write(append(b, '\n'))
}

// cmdExits runs a program and checks its exit code: `exits 3 walkie post
// ...`. Its stdout and stderr are kept for the stdout/stderr commands.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}
