package blackbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"

	"github.com/walkie-sh/walkie/walkie"
)

// tb stands in for a test, to see the helpers fail one: Fatal ends the
// goroutine as testing's does, and the cleanups run at the end of run.
type tb struct {
	testing.TB
	mu       sync.Mutex
	msgs     []string
	failed   bool
	cleanups []func()
}

// run calls fn as a test's body and returns what it failed with, "" if it
// passed.
func run(t *testing.T, fn func(tb testing.TB)) string {
	f := &tb{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	for _, c := range slices.Backward(f.cleanups) {
		c()
	}
	if !f.failed {
		return ""
	}
	return strings.Join(f.msgs, "\n")
}

func (f *tb) Helper()             {}
func (f *tb) Name() string        { return "Fake" }
func (f *tb) Cleanup(fn func())   { f.cleanups = append(f.cleanups, fn) }
func (f *tb) Logf(string, ...any) {}

func (f *tb) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func (f *tb) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func (f *tb) Error(args ...any) { f.Errorf("%s", fmt.Sprint(args...)) }

func (f *tb) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

func (f *tb) Fatal(args ...any) {
	f.Error(args...)
	runtime.Goexit()
}

// An attempt in the log is read by the documented names only: a field
// the docs do not name, or one renamed, fails the test that reads it; so
// does a line of the log that is not whole or whose checksum fails.
func TestReadTurnsIsStrict(t *testing.T) {
	for _, c := range []struct {
		name, line, fails string
		damage            func([]byte) []byte
	}{
		{"documented", `{"turn":1,"agent":"a","outcome":"accepted","worker":"w1","transcript":{"raw":"r","text":"t"}}`, "", nil},
		{"unknown field", `{"turn":1,"agent":"a","outcome":"accepted","cost":1}`, `unknown field "cost"`, nil},
		{"renamed field", `{"turn":1,"agent":"a","result":"accepted"}`, `unknown field "result"`, nil},
		{"torn line", `{"turn":1,"agent":"a","outcome":"accepted"}`, "log.jsonl: unexpected EOF", func(b []byte) []byte { return append(b, `{"n":2,"op":"ended","at`...) }},
		{"bad checksum", `{"turn":1,"agent":"a","outcome":"accepted"}`, "checksum does not match", func(b []byte) []byte { return bytes.Replace(b, []byte(`"a"`), []byte(`"b"`), 1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l := walkie.OpenLog(dir)
			if _, err := l.Save(walkie.OpEnded, &walkie.State{}, json.RawMessage(c.line)); err != nil {
				t.Fatal(err)
			}
			l.Close()
			if c.damage != nil {
				path := filepath.Join(dir, walkie.LogFile)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, c.damage(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var recs []Turn
			got := run(t, func(tb testing.TB) { recs = ReadTurns(tb, dir) })
			if c.fails == "" && (got != "" || len(recs) != 1 || recs[0].Worker != "w1" || recs[0].Transcript.Text != "t") {
				t.Fatalf("failed %q, read %+v", got, recs)
			}
			if !strings.Contains(got, c.fails) {
				t.Fatalf("failed with %q, want it to say %q", got, c.fails)
			}
		})
	}
}

func TestReadTurnsOfNoRun(t *testing.T) {
	if got := run(t, func(tb testing.TB) {
		if recs := ReadTurns(tb, t.TempDir()); recs != nil {
			tb.Errorf("read %v from no file", recs)
		}
	}); got != "" {
		t.Fatal(got)
	}
}

// The marker finds a process the run started and its child, and NoneLeft
// fails the test over them and kills them.
func TestMarkerFindsWhatIsLeft(t *testing.T) {
	sh := sessiontest.Tool(t, "sh")
	m := NewMarker(t)
	r := Runner{T: t, Bin: sh, Dir: t.TempDir(), Env: append(Env("", m), "PATH="+os.Getenv("PATH")), Limit: time.Minute}
	p := r.Start("-c", "sleep 600 & echo started; wait")
	sessiontest.WaitFor(t, 10*time.Second, "the shell and its sleep carrying the marker", func() bool { return len(m.Pids()) == 2 })
	// Both command lines hold 600; only the shell's holds echo.
	if all, sh := m.PidsRunning("600"), m.PidsRunning("echo"); len(all) != 2 || len(sh) != 1 || sh[0] != p.Cmd.Process.Pid {
		t.Errorf("processes running 600: %v, echo: %v (the shell is %d)", all, sh, p.Cmd.Process.Pid)
	}
	pids := m.Pids()
	got := run(t, func(tb testing.TB) { m.NoneLeft(tb, 50*time.Millisecond) })
	if !strings.Contains(got, "processes of the run are still alive") || !strings.Contains(got, "sleep 600") {
		t.Errorf("NoneLeft failed with %q", got)
	}
	for _, pid := range pids {
		sessiontest.WaitFor(t, 10*time.Second, fmt.Sprintf("pid %d killed", pid), func() bool { return !Alive(pid) })
	}
	if r := p.Wait(10 * time.Second); r.Code != -1 || !strings.Contains(r.Stdout, "started") {
		t.Errorf("the killed shell: %+v", r)
	}
	if got := run(t, func(tb testing.TB) { m.NoneLeft(tb, time.Second) }); got != "" {
		t.Errorf("NoneLeft with nothing left: %s", got)
	}
}

// A command past its limit is killed and fails the test; one that exits
// with another code than wanted fails it, showing its output.
func TestRunLimitsAndCodes(t *testing.T) {
	sh := sessiontest.Tool(t, "sh")
	r := Runner{Bin: sh, Dir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}, Limit: 200 * time.Millisecond}
	var res Result
	got := run(t, func(tb testing.TB) {
		r.T = tb
		r.Run("-c", "echo begun >&2; exec sleep 600")
	})
	if !strings.Contains(got, "still running after 200ms") || !strings.Contains(got, "begun") {
		t.Errorf("past its limit: %q", got)
	}
	r.Limit = time.Minute
	got = run(t, func(tb testing.TB) {
		r.T = tb
		res = r.MustRun(3, "-c", "echo out; echo err >&2; exit 4")
	})
	if !strings.Contains(got, "exit 4, want 3") || !strings.Contains(got, "stdout:\nout\n") || !strings.Contains(got, "stderr:\nerr\n") {
		t.Errorf("the wrong code: %q", got)
	}
	got = run(t, func(tb testing.TB) {
		r.T = tb
		res = r.MustRun(4, "-c", "echo out; echo err >&2; exit 4")
	})
	if got != "" || res.Code != 4 || res.Stdout != "out\n" || res.Stderr != "err\n" {
		t.Errorf("the right code: failed %q, result %+v", got, res)
	}
	// A child left holding the output does not hold the result.
	m := NewMarker(t)
	t.Cleanup(m.Kill)
	left := r
	left.Env = append(left.Env, m.Env())
	got = run(t, func(tb testing.TB) {
		left.T = tb
		res = left.MustRun(0, "-c", "sleep 600 & exit 0")
	})
	if got != "" || !strings.Contains(res.Stderr, "held open by another process") {
		t.Errorf("a child left behind: failed %q, result %+v", got, res)
	}
	got = run(t, func(tb testing.TB) {
		r.T = tb
		r.MustRun(0, "-c", "echo 'WARNING: DATA RACE' >&2")
	})
	if !strings.Contains(got, "the race detector fired") {
		t.Errorf("a race in the output: %q", got)
	}
}

// WaitSaid counts what the command said, and gives up when it ends first.
func TestWaitSaid(t *testing.T) {
	sh := sessiontest.Tool(t, "sh")
	r := Runner{T: t, Bin: sh, Dir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}}
	p := r.Start("-c", "echo tick >&2; echo tick >&2; read x")
	if err := p.WaitSaid("tick", 2, 10*time.Second); err != nil {
		t.Error(err)
	}
	p.End()
	p = r.Start("-c", "echo tick >&2; exit 5")
	if err := p.WaitSaid("tick", 2, 10*time.Second); err == nil || !strings.Contains(err.Error(), "exited 5 before saying") {
		t.Errorf("after the end: %v", err)
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Top: "notify: {}", Defaults: map[string]string{"timeout": "20s", "grace": "1s"},
		Agents: []Agent{
			ScriptedAgent(t, dir, "ann", "sign: true", map[string]string{"usage": "none"}),
			{Name: "bob", Keys: map[string]string{"command": "[bob]"}, More: "    env:\n      K: v\n"},
		}}
	want := "notify: {}\ndefaults:\n  grace: 1s\n  timeout: 20s\nagents:\n" +
		"  ann:\n    command: " + FakeAgentCommand(filepath.Join(dir, "ann.yaml"), filepath.Join(dir, "fake", "ann.state")) + "\n" +
		"    sandbox_read: [\"" + filepath.Join(dir, "ann.yaml") + "\"]\n    usage: none\n" +
		"  bob:\n    command: [bob]\n    env:\n      K: v\n"
	if got := cfg.String(); got != want {
		t.Errorf("config:\n%s\nwant:\n%s", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ann.yaml")); err != nil || string(b) != "sign: true\n" {
		t.Errorf("ann's script: %q, %v", b, err)
	}
	if got, want := FakeAgentCommand("s.yaml", ""), `[fakeagent, --file, "{file}", --agent, "{agent}", --script, "s.yaml"]`; got != want {
		t.Errorf("uncounted: %s, want %s", got, want)
	}
}
