package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session"
)

// bin is the fake agent built once for this test binary, so behaviours are
// tested as the controller sees them: a separate program in a pty.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeagent-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "fakeagent")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building fakeagent:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const briefing = `---
walkie: 1
id: api-shape
participants: [claude, codex]
max_rounds: 6
---
# Briefing
Decide the shape of the API.

`

const turn1 = `
## Turn 1 · claude
I propose the small one.
<!-- walkie seq=1 agent=claude -->
`

func newRecord(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.walkie.md")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// session runs the fake agent as codex in a pty.
func runAgent(t *testing.T, record string, spec session.Spec, args ...string) (session.Result, string) {
	t.Helper()
	spec.Argv = append([]string{bin, "--file", record, "--agent", "codex"}, args...)
	spec.TextPath = filepath.Join(t.TempDir(), "text")
	if spec.Timeout == 0 {
		spec.Timeout = 20 * time.Second
	}
	r, err := session.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(spec.TextPath)
	if err != nil {
		t.Fatal(err)
	}
	return r, string(b)
}

const defaultBody = "codex here, round 1. I read the briefing and every turn so far;\nmy position is unchanged and stated plainly.\n"

// TestBehaviours runs each behaviour through a real pty and checks the
// session's result, the terminal output and the record.
func TestBehaviours(t *testing.T) {
	t.Parallel()
	start := briefing + turn1
	tests := []struct {
		name   string
		args   []string
		spec   session.Spec
		ending session.Ending
		code   int
		// after is what the agent added to the record (start stripped),
		// or, with whole, the entire record.
		after  string
		whole  bool
		output string // a substring of the plain-text output
	}{
		{name: "append", ending: session.EndExited, after: "\n## Turn 2 · codex\n" + defaultBody},
		{name: "append signed", args: []string{"--sign"}, ending: session.EndExited,
			after: "\n## Turn 2 · codex\n" + defaultBody + "Signed-off-by: codex\n"},
		{name: "sign from a later round", args: []string{"--sign-from", "2"}, ending: session.EndExited,
			after: "\n## Turn 2 · codex\n" + defaultBody},
		{name: "bodies per round", args: []string{"--turn", "6", "--body", "r1", "--body", "r2 of {agent}, turn {turn}"}, ending: session.EndExited,
			after: "\n## Turn 6 · codex\nr2 of codex, turn 6\n"},
		{name: "chatter", args: []string{"--chatter", "2"}, ending: session.EndExited,
			after: "\n## Turn 2 · codex\n" + defaultBody, output: "✓ step 2: read "},
		{name: "delay", args: []string{"--delay", "50ms"}, ending: session.EndExited,
			after: "\n## Turn 2 · codex\n" + defaultBody},
		{name: "hang", args: []string{"--behavior", "hang"}, spec: session.Spec{Timeout: 300 * time.Millisecond},
			ending: session.EndTimeout, code: -1, after: ""},
		{name: "hang after appending", args: []string{"--hang-after"}, spec: session.Spec{Timeout: 500 * time.Millisecond},
			ending: session.EndTimeout, code: -1, after: "\n## Turn 2 · codex\n" + defaultBody},
		{name: "exit non-zero after appending", args: []string{"--exit-code", "7"}, ending: session.EndExited, code: 7,
			after: "\n## Turn 2 · codex\n" + defaultBody},
		{name: "exit non-zero without appending", args: []string{"--behavior", "none", "--exit-code", "4"}, ending: session.EndExited, code: 4},
		{name: "nothing", args: []string{"--behavior", "none"}, ending: session.EndExited},
		{name: "two turns", args: []string{"--behavior", "two-turns"}, ending: session.EndExited,
			after: "\n## Turn 2 · codex\n" + defaultBody + "\n## Turn 3 · codex\ncodex here, round 1. I read the briefing and every turn so far;\nmy position is unchanged and stated plainly.\n"},
		{name: "edit briefing", args: []string{"--behavior", "edit-briefing"}, ending: session.EndExited, whole: true,
			after: strings.Replace(start, "Decide the shape", "tampered the shape", 1) + "\n## Turn 2 · codex\n" + defaultBody},
		{name: "edit an earlier turn", args: []string{"--behavior", "edit-turn"}, ending: session.EndExited, whole: true,
			after: strings.Replace(start, "I propose", "I tampered", 1) + "\n## Turn 2 · codex\n" + defaultBody},
		{name: "wrong heading", args: []string{"--behavior", "wrong-heading"}, ending: session.EndExited,
			after: "\n## Turn 2 - codex\n" + defaultBody},
		{name: "wrong author", args: []string{"--behavior", "wrong-author", "--author", "claude"}, ending: session.EndExited,
			after: "\n## Turn 2 · claude\n" + defaultBody},
		{name: "not logged in", args: []string{"--behavior", "not-logged-in"}, ending: session.EndExited, code: 1,
			output: "Not logged in · Please run /login\n"},
		{name: "flood", args: []string{"--behavior", "none", "--flood-mb", "0.5"}, ending: session.EndExited,
			output: "flood 000000000: lorem ipsum"},
		{name: "question answered yes", args: []string{"--ask", "Proceed?"},
			spec:   session.Spec{Rules: []session.Rule{{Pattern: regexp.MustCompile(`Proceed\? \[y/N\] `), Reply: "y\r"}}},
			ending: session.EndExited, after: "\n## Turn 2 · codex\n" + defaultBody, output: "Proceed? [y/N] y\n"},
		{name: "question answered no", args: []string{"--ask", "Proceed?"},
			spec:   session.Spec{Rules: []session.Rule{{Pattern: regexp.MustCompile(`Proceed\?`), Reply: "n\r"}}},
			ending: session.EndExited, output: "Not confirmed; leaving the file alone.\n"},
		{name: "question unanswered", args: []string{"--ask", "Proceed?"}, spec: session.Spec{Stall: 300 * time.Millisecond},
			ending: session.EndStalled, code: -1},
		{name: "stdin until EOF", args: []string{"--read-stdin"}, spec: session.Spec{Input: []byte("one\ntwo\n\x04")},
			ending: session.EndExited, after: "\n## Turn 2 · codex\n" + defaultBody, output: "read 8 bytes from stdin\n"},
		{name: "usage line", args: []string{"--usage", "--cost-usd", "0.5", "--input-tokens", "10", "--output-tokens", "20"},
			ending: session.EndExited, after: "\n## Turn 2 · codex\n" + defaultBody,
			output: `{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":20}}` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			record := newRecord(t, start)
			r, out := runAgent(t, record, tc.spec, tc.args...)
			if r.Ending != tc.ending || r.ExitCode != tc.code {
				t.Errorf("ending %s code %d (%s), want %s %d", r.Ending, r.ExitCode, r.Detail, tc.ending, tc.code)
			}
			b, _ := os.ReadFile(record)
			got := string(b)
			if !tc.whole {
				if !strings.HasPrefix(got, start) {
					t.Fatalf("the record's start changed:\n%s", got)
				}
				got = got[len(start):]
			}
			if got != tc.after {
				t.Errorf("record after the run:\n%q\nwant\n%q", got, tc.after)
			}
			if !strings.Contains(out, tc.output) {
				t.Errorf("output %q does not contain %q", out, tc.output)
			}
		})
	}
}

// TestGrandchildBehaviour: the fake agent leaves a grandchild that ignores
// SIGTERM and holds the terminal; the session still ends promptly and the
// grandchild dies with the group.
func TestGrandchildBehaviour(t *testing.T) {
	t.Parallel()
	record := newRecord(t, briefing+turn1)
	pidFile := filepath.Join(t.TempDir(), "pid")
	r, _ := runAgent(t, record, session.Spec{Grace: 2 * time.Second}, "--behavior", "grandchild", "--pid-file", pidFile)
	if r.Ending != session.EndExited || r.ExitCode != 0 || r.Duration > 2*time.Second {
		t.Errorf("result %+v", r)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("grandchild %d survived the session", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// TestScriptSequence: with a state file, the first invocation hangs and the
// retry appends, as a "hang, then succeed on retry" test needs.
func TestScriptSequence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "s.yaml")
	os.WriteFile(script, []byte(`
sign_from: 2
bodies: ["first round", "second round"]
steps:
  - behavior: hang
  - {}
  - behavior: append
    usage: true
`), 0o644)
	state := filepath.Join(dir, "state")
	record := newRecord(t, briefing+turn1)
	args := []string{"--script", script, "--state", state}

	r, _ := runAgent(t, record, session.Spec{Timeout: 300 * time.Millisecond}, args...)
	if r.Ending != session.EndTimeout {
		t.Fatalf("first invocation: %+v", r)
	}
	r, _ = runAgent(t, record, session.Spec{}, args...)
	if r.Ending != session.EndExited || r.ExitCode != 0 {
		t.Fatalf("second invocation: %+v", r)
	}
	// Third and later: the last step repeats. Turn 3 is round 2: signed.
	for range 2 {
		r, out := runAgent(t, record, session.Spec{}, args...)
		if r.Ending != session.EndExited || !strings.Contains(out, `"total_cost_usd":0.0123`) {
			t.Fatalf("later invocation: %+v %q", r, out)
		}
	}
	b, _ := os.ReadFile(record)
	want := briefing + turn1 +
		"\n## Turn 2 · codex\nfirst round\n" +
		"\n## Turn 3 · codex\nsecond round\nSigned-off-by: codex\n" +
		"\n## Turn 4 · codex\nsecond round\nSigned-off-by: codex\n"
	if string(b) != want {
		t.Errorf("record:\n%s\nwant\n%s", b, want)
	}
	if s, _ := os.ReadFile(state); string(s) != "4\n" {
		t.Errorf("state file = %q", s)
	}
}

func TestHelpAndBadFlags(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Errorf("--help exit code %d", code)
	}
	for _, s := range []string{"usage: fakeagent", "steps", "-behavior", "sign_from"} {
		if !strings.Contains(errOut.String(), s) {
			t.Errorf("--help does not mention %q", s)
		}
	}
	for _, args := range [][]string{
		{"--agent", "x"},
		{"--file", "/nonexistent", "--agent", "x"},
		{"--file", "f", "--agent", "x", "--behavior", "dance"},
		{"--no-such-flag"},
	} {
		errOut.Reset()
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errOut); code != 2 {
			t.Errorf("%q: exit code %d, want 2", args, code)
		}
		if errOut.Len() == 0 {
			t.Errorf("%q: no message", args)
		}
	}
}
