package session

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// fakeagent is the path of the fake agent built once for this test binary.
var fakeagent string

func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" {
		crashHelper() // this process plays a controller that gets killed
		return
	}
	if arg := os.Getenv(watchdogHelperEnv); arg != "" {
		watchdogHelper(arg) // a controller holding a watchdog, killed
		return
	}
	dir, err := os.MkdirTemp("", "walkie-session-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeagent = filepath.Join(dir, "fakeagent")
	build := exec.Command("go", "build", "-o", fakeagent, "../cmd/fakeagent")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building fakeagent:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// Every session's goroutines must be gone once its Wait returned.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

const sampleRecord = `---
walkie: 1
id: t
participants: [claude, codex]
---
# Briefing
Decide the shape of the API.

## Turn 1 · claude
I propose the small one.
<!-- walkie seq=1 agent=claude -->
`

// newRecord writes a walkie file with one turn and returns its path.
func newRecord(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.walkie.md")
	if err := os.WriteFile(p, []byte(sampleRecord), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeSpec runs the fake agent as codex on record, with transcripts in a
// temp dir.
func fakeSpec(t testing.TB, record string, args ...string) Spec {
	dir := t.TempDir()
	return Spec{
		Argv:     append([]string{fakeagent, "--file", record, "--agent", "codex"}, args...),
		RawPath:  filepath.Join(dir, "raw.log"),
		TextPath: filepath.Join(dir, "text.txt"),
		Grace:    time.Second,
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run runs spec and fails the test on a start error.
func run(t testing.TB, ctx context.Context, spec Spec) Result {
	t.Helper()
	r, err := Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return r
}
