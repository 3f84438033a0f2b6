package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// needLandlock skips (fails, in CI) a test that needs the whole boundary.
func needLandlock(t *testing.T) {
	t.Helper()
	if abi := landlockABI(); abi < fullABI {
		sessiontest.Need(t, errors.New("this kernel's Landlock ABI is below 6: "+strings.Join(missingAt(abi), "; ")))
	}
}

// debateDir lays out what a debater's boundary must tell apart: its
// folder with notes it may read and its record, beside the debate's
// state, another debate's record and hidden tests; and a user's HOME with
// a key in it.
type debateDir struct {
	root, home, work, record, state string
}

func newDebateDir(t *testing.T) debateDir {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := debateDir{root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	d.record = filepath.Join(d.work, "t.walkie.md")
	d.state = filepath.Join(d.work, ".walkie", "t")
	writeTestFile(t, filepath.Join(d.home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n")
	writeTestFile(t, filepath.Join(d.work, "notes.md"), "notes\n")
	writeTestFile(t, d.record, sampleRecord)
	writeTestFile(t, filepath.Join(d.work, "other.walkie.md"), "another debate\n")
	writeTestFile(t, filepath.Join(d.work, "hidden", "test_it.py"), "assert True\n")
	writeTestFile(t, filepath.Join(d.state, "state.json"), "{}\n")
	writeTestFile(t, filepath.Join(d.state, "turns.jsonl"), "")
	return d
}

// hostileSpec is a debater's session on d that tries everything it must
// not do, then takes its turn.
func (d debateDir) hostileSpec(t *testing.T, level SandboxLevel) Spec {
	spec := fakeSpec(t, d.record,
		"--try-read", filepath.Join(d.home, ".ssh", "id_ed25519"),
		"--try-read", filepath.Join(d.work, "other.walkie.md"),
		"--try-read", filepath.Join(d.work, "hidden", "test_it.py"),
		"--try-read", filepath.Join(d.state, "state.json"),
		"--try-read", "/proc/1/environ",
		"--try-read", "/proc/{ppid}/environ",
		"--try-read", filepath.Join(d.work, "notes.md"),
		"--try-write", filepath.Join(d.work, "outside.txt"),
		"--try-write", filepath.Join(d.state, "state.json"),
		"--try-write", filepath.Join(d.state, "turns.jsonl"),
		"--try-write", filepath.Join(d.root, "elsewhere.txt"),
		"--try-write", "$TMPDIR/scratch.txt",
	)
	spec.Dir, spec.PrivateHome = d.work, true
	spec.Sandbox = Sandbox{Level: level, Reach: Reach{
		Read:  []string{d.work},
		Write: []string{d.record},
		Hide:  []string{filepath.Join(d.work, ".walkie"), filepath.Join(d.work, "other.walkie.md"), filepath.Join(d.work, "hidden")},
	}}
	return spec
}

// A hostile debater under Landlock: every attempt on what it may not reach
// is refused, what it may reach is reached, its turn still goes in, the
// files it attacked are as they were, and the result names each refused
// path.
func TestSandboxHoldsAgainstAHostileAgent(t *testing.T) {
	needLandlock(t)
	d := newDebateDir(t)
	t.Setenv("HOME", d.home) // walkie's notion of the user's HOME
	r := run(t, context.Background(), d.hostileSpec(t, SandboxRequired))
	want(t, r, EndExited, EndedBySelf, 0, "")
	text := readFile(t, r.TextPath)
	t.Logf("the agent said:\n%s", text)
	refused := []string{
		filepath.Join(d.home, ".ssh", "id_ed25519"), filepath.Join(d.work, "other.walkie.md"),
		filepath.Join(d.work, "hidden", "test_it.py"), filepath.Join(d.state, "state.json"), "/proc/1/environ",
		filepath.Join(d.work, "outside.txt"), filepath.Join(d.state, "turns.jsonl"), filepath.Join(d.root, "elsewhere.txt"),
	}
	for _, p := range refused {
		if !strings.Contains(text, " "+p+": refused: ") {
			t.Errorf("%s was not refused:\n%s", p, text)
		}
		if !containsString(r.Sandbox.Refused, p) {
			t.Errorf("the result does not name %s as refused: %q", p, r.Sandbox.Refused)
		}
	}
	// walkie's own environment (here: the test's), with its keys.
	if !strings.Contains(text, "/environ: refused: ") || strings.Count(text, "/environ: ALLOWED") > 0 {
		t.Errorf("a process outside the sandbox had its environment read:\n%s", text)
	}
	for _, p := range []string{filepath.Join(d.work, "notes.md"), "scratch.txt"} {
		if !strings.Contains(text, p+": ALLOWED") {
			t.Errorf("%s was refused, and is the agent's to reach:\n%s", p, text)
		}
	}
	if r.Sandbox.Kind != "landlock" || r.Sandbox.ABI < fullABI || len(r.Sandbox.Missing) != 0 {
		t.Errorf("sandbox report %+v", *r.Sandbox)
	}
	if rec := readFile(t, d.record); !strings.Contains(rec, "## Turn 2 · codex\n") {
		t.Errorf("the turn did not go in:\n%s", rec)
	}
	for p, was := range map[string]string{filepath.Join(d.state, "state.json"): "{}\n", filepath.Join(d.state, "turns.jsonl"): ""} {
		if got := readFile(t, p); got != was {
			t.Errorf("%s was changed: %q", p, got)
		}
	}
	for _, p := range []string{filepath.Join(d.work, "outside.txt"), filepath.Join(d.root, "elsewhere.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// Without Landlock (simulated): auto runs the agent unconfined and says
// what was missing; required refuses to start, with ErrNoSandbox.
func TestSandboxUnavailable(t *testing.T) {
	d := newDebateDir(t)
	t.Setenv("HOME", d.home)
	t.Setenv(abiVar, "0")
	_, err := Run(context.Background(), d.hostileSpec(t, SandboxRequired))
	if !errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), "Landlock is not available") {
		t.Fatalf("required without Landlock: %v, want ErrNoSandbox saying why", err)
	}
	r := run(t, context.Background(), d.hostileSpec(t, SandboxAuto))
	want(t, r, EndExited, EndedBySelf, 0, "")
	if r.Sandbox == nil || r.Sandbox.Kind != "" || len(r.Sandbox.Missing) != 1 {
		t.Fatalf("sandbox report %+v, want none applied and one line missing", r.Sandbox)
	}
	// Nothing held it: the simulation is real, not a report.
	if text := readFile(t, r.TextPath); !strings.Contains(text, "other.walkie.md: ALLOWED") {
		t.Errorf("without Landlock the read was still refused:\n%s", text)
	}
}

// An older ABI (simulated) is applied for what it has, and the report
// says what it lacks.
func TestSandboxOlderABI(t *testing.T) {
	needLandlock(t)
	d := newDebateDir(t)
	t.Setenv("HOME", d.home)
	t.Setenv(abiVar, "2")
	if _, err := Run(context.Background(), d.hostileSpec(t, SandboxRequired)); !errors.Is(err, ErrNoSandbox) {
		t.Fatalf("required at ABI 2: %v, want ErrNoSandbox", err)
	}
	r := run(t, context.Background(), d.hostileSpec(t, SandboxAuto))
	if r.Sandbox.Kind != "landlock" || r.Sandbox.ABI != 2 || !strings.Contains(strings.Join(r.Sandbox.Missing, "\n"), "truncate(2) is not restricted") {
		t.Fatalf("sandbox report %+v", *r.Sandbox)
	}
	if text := readFile(t, r.TextPath); !strings.Contains(text, "other.walkie.md: refused") {
		t.Errorf("ABI 2 did not hold reads:\n%s", text)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// What the boundary costs a session: /bin/true run to its end, without a
// sandbox and with a debater's (the ruleset built, the trampoline run).
func BenchmarkSandboxedSession(b *testing.B) {
	dir := b.TempDir()
	for _, c := range []struct {
		name  string
		level SandboxLevel
	}{{"off", SandboxOff}, {"landlock", SandboxRequired}} {
		b.Run(c.name, func(b *testing.B) {
			if c.level.On() && landlockABI() < fullABI {
				b.Skip("no Landlock here")
			}
			spec := Spec{Argv: []string{"/bin/true"}, Dir: dir, PrivateHome: true, Grace: time.Second,
				Sandbox: Sandbox{Level: c.level, Reach: Reach{Read: []string{dir}}}}
			for b.Loop() {
				if _, err := Run(context.Background(), spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
