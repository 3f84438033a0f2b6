package session

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// TestEndings runs one session per ending and checks the result and the
// transcripts.
func TestEndings(t *testing.T) {
	t.Parallel()
	notLoggedIn := Rule{Pattern: regexp.MustCompile(`Not logged in`), Outcome: "auth", Detail: "the CLI is not logged in"}
	tests := []struct {
		name string
		args []string
		spec func(*Spec)
		// act runs while the session runs; cancel cancels its context.
		act   func(t *testing.T, s *Session, record string, cancel context.CancelCauseFunc)
		check func(t *testing.T, r Result, record, text string)
	}{{
		name: "exited",
		args: []string{"--chatter", "2", "--sign"},
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndExited, EndedBySelf, 0, "")
			if r.Detail != "exit code 0" {
				t.Errorf("Detail = %q", r.Detail)
			}
			if !strings.HasSuffix(record, "\n## Turn 2 · codex\ncodex here, round 1. I read the briefing and every turn so far;\nmy position is unchanged and stated plainly.\nSigned-off-by: codex\n") {
				t.Errorf("record does not end with a signed turn 2:\n%s", record)
			}
			// The spinner's frames collapse into the line that replaced them.
			wantText := "✓ step 1: read RECORD\n✓ step 2: read RECORD\n"
			if text != wantText {
				t.Errorf("text transcript = %q, want %q", text, wantText)
			}
		},
	}, {
		name: "exit code",
		args: []string{"--exit-code", "3"},
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndExited, EndedBySelf, 3, "")
			if r.Detail != "exit code 3" {
				t.Errorf("Detail = %q", r.Detail)
			}
		},
	}, {
		name: "timeout",
		args: []string{"--behavior", "hang", "--chatter", "1"},
		spec: func(s *Spec) { s.Timeout = 300 * time.Millisecond },
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndTimeout, EndedByController, -1, "SIGTERM")
			if r.Duration < 300*time.Millisecond || r.Duration > 300*time.Millisecond+time.Second {
				t.Errorf("Duration = %s, want 300ms plus a little", r.Duration)
			}
			if !strings.Contains(text, "step 1: read") {
				t.Errorf("output before the timeout is missing: %q", text)
			}
			if strings.Count(record, "## Turn") != 1 {
				t.Errorf("a hanging agent changed the record")
			}
		},
	}, {
		name: "stalled",
		args: []string{"--behavior", "hang"},
		spec: func(s *Spec) { s.Stall = 300 * time.Millisecond },
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndStalled, EndedByController, -1, "SIGTERM")
			if !strings.HasPrefix(r.Detail, "no output and no progress for") {
				t.Errorf("Detail = %q", r.Detail)
			}
		},
	}, {
		name: "progress defers the stall",
		args: []string{"--behavior", "hang"},
		spec: func(s *Spec) { s.Stall = 300 * time.Millisecond },
		act: func(t *testing.T, s *Session, record string, cancel context.CancelCauseFunc) {
			for i := 0; i < 8; i++ { // 800 ms of reported progress
				s.Progress()
				time.Sleep(100 * time.Millisecond)
			}
		},
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndStalled, EndedByController, -1, "SIGTERM")
			if r.Duration < 1000*time.Millisecond {
				t.Errorf("stalled after %s despite progress until 800ms", r.Duration)
			}
		},
	}, {
		name: "ended by caller",
		args: []string{"--hang-after"},
		act: func(t *testing.T, s *Session, record string, cancel context.CancelCauseFunc) {
			sessiontest.WaitFor(t, 10*time.Second, "turn 2 in the record", func() bool {
				b, _ := os.ReadFile(record)
				return strings.Contains(string(b), "## Turn 2 · codex")
			})
			s.End("the turn is in")
			s.End("ignored: only the first reason counts")
		},
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndCaller, EndedByController, -1, "SIGTERM")
			if r.Detail != "the turn is in" {
				t.Errorf("Detail = %q", r.Detail)
			}
		},
	}, {
		name: "cancelled",
		args: []string{"--behavior", "hang"},
		act: func(t *testing.T, s *Session, record string, cancel context.CancelCauseFunc) {
			cancel(errors.New("controller stopping"))
		},
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndCancelled, EndedByController, -1, "SIGTERM")
			if r.Detail != "cancelled: controller stopping" {
				t.Errorf("Detail = %q", r.Detail)
			}
		},
	}, {
		name: "blocked prompt that hangs",
		args: []string{"--ask", "Do you trust the files in this folder?"},
		spec: func(s *Spec) {
			s.Rules = []Rule{{Pattern: regexp.MustCompile(`Do you trust the files in (this|the) folder\?`), Outcome: "blocked-prompt", Detail: "trust dialog"}}
		},
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndBlocked, EndedByController, -1, "SIGTERM")
			if r.RuleOutcome != "blocked-prompt" || r.Matched != "Do you trust the files in this folder?" || r.Detail != "trust dialog" {
				t.Errorf("rule fields = %q %q %q", r.RuleOutcome, r.Matched, r.Detail)
			}
			if r.Duration > time.Second {
				t.Errorf("a blocking prompt cost %s", r.Duration)
			}
		},
	}, {
		name: "blocked prompt then exit",
		args: []string{"--behavior", "not-logged-in"},
		spec: func(s *Spec) { s.Rules = []Rule{notLoggedIn} },
		check: func(t *testing.T, r Result, record, text string) {
			if r.Ending != EndBlocked || r.RuleOutcome != "auth" || r.Matched != "Not logged in" || r.Detail != "the CLI is not logged in" {
				t.Errorf("result = %+v", r)
			}
			// Whether the exit or the match is seen first, the process is
			// gone and either exited 1 or was terminated.
			if !(r.ExitCode == 1 && r.Signal == "") && r.Signal != "SIGTERM" {
				t.Errorf("exit = %d %q", r.ExitCode, r.Signal)
			}
			if text != "Not logged in · Please run /login\n" {
				t.Errorf("text transcript = %q", text)
			}
		},
	}, {
		name: "not logged in without rules",
		args: []string{"--behavior", "not-logged-in"},
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndExited, EndedBySelf, 1, "")
		},
	}, {
		name: "reply rule answers a prompt",
		args: []string{"--ask", "Apply the change?"},
		spec: func(s *Spec) {
			s.Rules = []Rule{{Pattern: regexp.MustCompile(`Apply the change\? \[y/N\] $`), Reply: "y\r"}}
		},
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndExited, EndedBySelf, 0, "")
			if !strings.Contains(record, "## Turn 2 · codex") {
				t.Errorf("the answered agent did not append")
			}
			if !strings.Contains(text, "Apply the change? [y/N] y\n") {
				t.Errorf("text transcript = %q", text)
			}
		},
	}, {
		name: "input and stdin until EOF",
		args: []string{"--read-stdin"},
		spec: func(s *Spec) { s.Input = []byte("hello\n\x04") },
		check: func(t *testing.T, r Result, record, text string) {
			want(t, r, EndExited, EndedBySelf, 0, "")
			if !strings.Contains(text, "read 6 bytes from stdin\n") {
				t.Errorf("text transcript = %q", text)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			record := newRecord(t)
			spec := fakeSpec(t, record, tc.args...)
			if tc.spec != nil {
				tc.spec(&spec)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			s, err := Start(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if tc.act != nil {
				tc.act(t, s, record, cancel)
			}
			r := s.Wait()
			if r2 := s.Wait(); r2 != r {
				t.Errorf("second Wait = %+v, want the same result", r2)
			}
			raw := readFile(t, spec.RawPath)
			if int64(len(raw)) != r.Bytes {
				t.Errorf("raw transcript has %d bytes, Result.Bytes = %d", len(raw), r.Bytes)
			}
			if r.Pid != s.Pid() || r.Pid <= 0 || r.RawPath != spec.RawPath || r.TextPath != spec.TextPath {
				t.Errorf("result identity fields = %+v", r)
			}
			if r.Started.IsZero() || r.Ended.Before(r.Started) || r.Duration != r.Ended.Sub(r.Started) {
				t.Errorf("times = %s %s %s", r.Started, r.Ended, r.Duration)
			}
			text := strings.ReplaceAll(readFile(t, spec.TextPath), record, "RECORD")
			if strings.ContainsRune(text, 0x1b) {
				t.Errorf("text transcript has escapes: %q", text)
			}
			if left := leftovers(map[int]bool{r.Pid: true}, false); len(left) > 0 {
				t.Errorf("processes left: %v", left)
			}
			tc.check(t, r, readFile(t, record), text)
		})
	}
}

func want(t *testing.T, r Result, ending Ending, by string, code int, sig string) {
	t.Helper()
	if r.Ending != ending || r.EndedBy != by || r.ExitCode != code || r.Signal != sig {
		t.Errorf("got ending=%s by=%s code=%d signal=%q (detail %q), want %s %s %d %q",
			r.Ending, r.EndedBy, r.ExitCode, r.Signal, r.Detail, ending, by, code, sig)
	}
}

func TestStartFailed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := Run(context.Background(), Spec{
		Argv:        []string{"no-such-agent-cli"},
		Env:         []string{"PATH=" + dir},
		PrivateHome: true,
		RawPath:     filepath.Join(dir, "raw"),
	})
	if !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("err = %v, want exec.ErrNotFound", err)
	}
	for _, s := range []string{`"no-such-agent-cli"`, dir} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if r.Ending != EndStartFailed || r.ExitCode != -1 || r.Detail != err.Error() {
		t.Errorf("result = %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "raw")); err == nil {
		t.Errorf("a transcript was created for a session that never started")
	}

	if _, err := Start(context.Background(), Spec{}); err == nil {
		t.Errorf("empty argv started")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Spec{Argv: []string{"true"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a cancelled context: %v", err)
	}
	if _, err := Start(context.Background(), Spec{Argv: []string{"true"}, Dir: filepath.Join(dir, "missing")}); err == nil {
		t.Errorf("a missing directory started")
	}
}

// TestGraceThenKill: a group that ignores SIGTERM is killed after the
// grace period.
func TestGraceThenKill(t *testing.T) {
	t.Parallel()
	r := run(t, context.Background(), Spec{
		Argv:    []string{"sh", "-c", `trap "" TERM; echo ready; sleep 60`},
		Timeout: 200 * time.Millisecond,
		Grace:   300 * time.Millisecond,
	})
	want(t, r, EndTimeout, EndedByController, -1, "SIGKILL")
	if r.Duration < 500*time.Millisecond || r.Duration > 2*time.Second {
		t.Errorf("Duration = %s, want timeout+grace", r.Duration)
	}
	if left := leftovers(map[int]bool{r.Pid: true}, false); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
}

// TestGrandchildKeepsPtyOpen: the leader exits while a grandchild that
// ignores SIGTERM and SIGHUP holds the terminal. The session ends well
// within the grace period with the leader's output complete, and the
// grandchild is gone.
func TestGrandchildKeepsPtyOpen(t *testing.T) {
	t.Parallel()
	record := newRecord(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := fakeSpec(t, record, "--behavior", "grandchild", "--pid-file", pidFile, "--chatter", "3", "--usage")
	spec.Grace = 3 * time.Second
	r := run(t, context.Background(), spec)
	want(t, r, EndExited, EndedBySelf, 0, "")
	if r.Duration > spec.Grace {
		t.Errorf("session took %s, more than the grace %s", r.Duration, spec.Grace)
	}
	text := readFile(t, spec.TextPath)
	if !strings.Contains(text, "step 3: read") || !strings.Contains(text, `"total_cost_usd":0.0123`) {
		t.Errorf("leader output incomplete: %q", text)
	}
	pid := readPid(t, pidFile)
	sessiontest.WaitFor(t, 5*time.Second, "grandchild gone", func() bool { return !alive(pid) })
	if !strings.Contains(readFile(t, record), "## Turn 2 · codex") {
		t.Errorf("no turn appended")
	}
}

// TestEscapedGrandchild: a grandchild that left the session with setsid
// survives the group kill and keeps the terminal open; the drain is capped
// so Wait returns within about a grace period anyway.
func TestEscapedGrandchild(t *testing.T) {
	t.Parallel()
	record := newRecord(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := fakeSpec(t, record, "--behavior", "grandchild", "--grandchild-setsid", "--pid-file", pidFile, "--chatter", "1")
	spec.Grace = 500 * time.Millisecond
	r := run(t, context.Background(), spec)
	pid := readPid(t, pidFile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	want(t, r, EndExited, EndedBySelf, 0, "")
	if r.Duration > spec.Grace+time.Second {
		t.Errorf("Wait took %s with an escaped grandchild (grace %s)", r.Duration, spec.Grace)
	}
	if !strings.Contains(readFile(t, spec.TextPath), "step 1: read") {
		t.Errorf("leader output missing")
	}
}

func readPid(t *testing.T, p string) int {
	t.Helper()
	var pid int
	sessiontest.WaitFor(t, 5*time.Second, "pid file written", func() bool {
		b, err := os.ReadFile(p)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// TestLastOutputNotLost: everything written just before a fast exit is in
// both transcripts, byte for byte.
func TestLastOutputNotLost(t *testing.T) {
	t.Parallel()
	const size = 3<<20 + 17 // not a multiple of any buffer
	record := newRecord(t)
	spec := fakeSpec(t, record, "--behavior", "none", "--flood-mb", strconv.FormatFloat(float64(size)/(1<<20), 'f', -1, 64))
	var seen atomic.Int64
	spec.Observer = func(chunk []byte) { seen.Add(int64(len(chunk))) }
	r := run(t, context.Background(), spec)
	want(t, r, EndExited, EndedBySelf, 0, "")
	text := readFile(t, spec.TextPath)
	if len(text) != size {
		t.Fatalf("text transcript has %d bytes, want %d", len(text), size)
	}
	lines := strings.Count(text, "\n")
	if r.Bytes != int64(size+lines) { // the tty turns each "\n" into "\r\n"
		t.Errorf("Bytes = %d, want %d", r.Bytes, size+lines)
	}
	if seen.Load() != r.Bytes {
		t.Errorf("observer saw %d bytes, Result.Bytes = %d", seen.Load(), r.Bytes)
	}
	if !strings.HasPrefix(text, "flood 000000000: lorem") {
		t.Errorf("text starts %q", text[:40])
	}
}

func TestPrivateHomeAndEnv(t *testing.T) {
	// Not parallel: t.Setenv changes the environment every session copies.
	t.Setenv("WALKIE_TEST_SECRET", "leaked")
	t.Setenv("LC_WALKIE_TEST", "lc")
	dir := t.TempDir()
	spec := Spec{
		Argv:        []string{"sh", "-c", `echo "home=$HOME secret=${WALKIE_TEST_SECRET:-none} lc=$LC_WALKIE_TEST own=$OWN term=$TERM"; touch "$HOME/state"; stty size`},
		EnvAllow:    []string{"LC_*"},
		Env:         []string{"OWN=mine"},
		PrivateHome: true,
		Rows:        33, Cols: 77,
		TextPath: filepath.Join(dir, "text"),
	}
	r := run(t, context.Background(), spec)
	want(t, r, EndExited, EndedBySelf, 0, "")
	text := readFile(t, spec.TextPath)
	m := regexp.MustCompile(`home=(\S+) secret=none lc=lc own=mine term=xterm-256color\n33 77\n`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("environment seen by the child: %q", text)
	}
	if home := m[1]; home == os.Getenv("HOME") || !strings.Contains(home, "walkie-home-") {
		t.Errorf("HOME = %q, want a private one", home)
	} else if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("private HOME %s still exists after the session: %v", home, err)
	}
}

func TestBuildEnv(t *testing.T) {
	parent := []string{"PATH=/bin", "HOME=/root", "LANG=C", "LC_ALL=C", "LC_TIME=x", "SECRET=s", "XDG_CONFIG_HOME=/root/.config", "TERM=dumb"}
	tests := []struct {
		name  string
		spec  Spec
		home  string
		wants []string
	}{
		{"nothing allowed keeps PATH and sets TERM", Spec{}, "", []string{"PATH=/bin", "TERM=xterm-256color"}},
		{"exact and prefix", Spec{EnvAllow: []string{"LANG", "LC_*", "TERM"}}, "", []string{"LANG=C", "LC_ALL=C", "LC_TIME=x", "TERM=dumb", "PATH=/bin"}},
		{"own values win", Spec{EnvAllow: []string{"LANG"}, Env: []string{"LANG=fr", "PATH=/opt"}}, "", []string{"LANG=fr", "PATH=/opt", "TERM=xterm-256color"}},
		{"private home drops the real one", Spec{EnvAllow: []string{"HOME", "XDG_*"}}, "/tmp/h", []string{"HOME=/tmp/h", "PATH=/bin", "TERM=xterm-256color"}},
		{"private home keeps an explicit XDG", Spec{Env: []string{"XDG_CONFIG_HOME=/x"}}, "/tmp/h", []string{"XDG_CONFIG_HOME=/x", "HOME=/tmp/h", "PATH=/bin", "TERM=xterm-256color"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := buildEnv(parent, tc.spec, madeDirs{home: tc.home})
			if strings.Join(got, " ") != strings.Join(tc.wants, " ") {
				t.Errorf("buildEnv = %q, want %q", got, tc.wants)
			}
		})
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "agent")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "plain"), []byte(""), 0o644)
	tests := []struct {
		name, cmd, path, dir, want string
		err                        bool
	}{
		{"found", "agent", "/nonexistent:" + dir, "", exe, false},
		{"not executable", "plain", dir, "", "", true},
		{"absent", "agent", "/nonexistent", "", "", true},
		{"slash relative to dir", "./agent", "", dir, "./agent", false},
		{"relative PATH entry", "agent", ".", dir, filepath.Join(dir, "agent"), false},
		{"empty", "", dir, "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookPath(tc.cmd, tc.path, tc.dir)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("lookPath = %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}
