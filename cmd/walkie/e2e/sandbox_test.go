//go:build linux

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

// needLandlock skips a test that needs the whole Landlock boundary (fails
// it in CI): the kernel's ABI, read the way walkie reads it, through
// `walkie doctor --json`.
func needLandlock(t *testing.T, d *debate) {
	t.Helper()
	r := d.Run("doctor", "--json")
	var checks []struct {
		Sandbox *blackbox.Sandbox `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &checks); err != nil || len(checks) == 0 || checks[0].Sandbox == nil {
		t.Fatalf("walkie doctor --json: %v\n%s", err, r.Stdout)
	}
	if sb := checks[0].Sandbox; sb.Kind != "landlock" || len(sb.Missing) > 0 {
		sessiontest.Need(t, errors.New("Landlock's whole boundary is not available here: "+strings.Join(sb.Missing, "; ")))
	}
}

// attack is what a hostile agent tries, and what must come of it.
type attack struct {
	reads, writes []string // must be refused
	allowed       []string // must be reached: the role's own
}

// script is the fake agent's script keys for the attack.
func (a attack) script() string {
	q := func(l []string) string {
		var b []string
		for _, p := range l {
			b = append(b, fmt.Sprintf("%q", p))
		}
		return "[" + strings.Join(b, ", ") + "]"
	}
	reads := append(slices.Clone(a.reads), a.allowedReads()...)
	writes := append(slices.Clone(a.writes), a.allowedWrites()...)
	return fmt.Sprintf("try_read: %s\ntry_write: %s\n", q(reads), q(writes))
}

// Allowed paths are tried by their verb: "read:P" or "write:P".
func (a attack) allowedReads() []string  { return a.allowedBy("read:") }
func (a attack) allowedWrites() []string { return a.allowedBy("write:") }
func (a attack) allowedBy(verb string) []string {
	var out []string
	for _, p := range a.allowed {
		if rest, ok := strings.CutPrefix(p, verb); ok {
			out = append(out, rest)
		}
	}
	return out
}

// check reads what the agent said (its transcript) and what walkie
// recorded of its sandbox: every forbidden attempt refused and named in
// the record, every allowed one reached.
func (a attack) check(t *testing.T, who, transcript string, sb *blackbox.Sandbox) {
	t.Helper()
	if sb == nil || sb.Kind != "landlock" {
		t.Fatalf("%s: no Landlock sandbox in the record: %+v", who, sb)
	}
	for _, op := range []struct {
		verb  string
		paths []string
	}{{"read", a.reads}, {"write", a.writes}} {
		for _, p := range op.paths {
			// {ppid} is walkie's pid: any process's environ but pid 1's.
			re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(p), regexp.QuoteMeta("{ppid}"), "([2-9]|[1-9][0-9]+)") + "$")
			lines := regexp.MustCompile(`(?m)^fakeagent: `+op.verb+` (\S+): (refused|ALLOWED)`).FindAllStringSubmatch(transcript, -1)
			tried := false
			for _, l := range lines {
				if re.MatchString(l[1]) {
					tried = true
					if l[2] != "refused" {
						t.Errorf("%s: %s %s was allowed", who, op.verb, l[1])
					}
				}
			}
			if !tried {
				t.Errorf("%s: %s %s was not tried:\n%s", who, op.verb, p, transcript)
			}
			if !slices.ContainsFunc(sb.Refused, re.MatchString) {
				t.Errorf("%s: the record does not name %s as refused: %q", who, p, sb.Refused)
			}
		}
	}
	for _, v := range a.allowed {
		verb, p, _ := strings.Cut(v, ":")
		if !strings.Contains(transcript, "fakeagent: "+verb+" "+p+": ALLOWED") {
			t.Errorf("%s: %s %s was refused, and is the role's own:\n%s", who, verb, p, transcript)
		}
	}
}

// absoluteFakes configures d's fake agents for sessions that do not work
// in d's folder (a reviewer's copy, a phase's, the distiller's): their
// scripts and counters named by absolute paths, the scripts and the other
// files to read granted.
func absoluteFakes(d *debate, parts []string, read ...string) {
	agents := map[string]map[string]string{}
	for _, p := range parts {
		agents[p] = map[string]string{"command": fmt.Sprintf(`[fakeagent, --file, "{file}", --agent, "{agent}", --script, %q, --state, %q]`,
			d.path(p+".yaml"), d.path("fake/"+p+".state"))}
		read = append(read, d.path(p+".yaml"))
	}
	d.configure(setup{participants: parts, agents: agents, defaults: map[string]string{"sandbox_read": "[" + quoted(read) + "]"}})
}

// hostileDir makes a fake HOME with a key in it for every walkie of d,
// another debate beside d's record, and a file to forge.
func hostileDir(t *testing.T, d *debate) (home string) {
	home = t.TempDir()
	must(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"), 0o600))
	d.Env = append(d.Env, "HOME="+home)
	d.MustRun(0, "init", "other.walkie.md", "--agents", "a,b", "--people", "a,b") // a bystander: who plays it does not matter
	return home
}

// A hostile debater tries everything it must not reach, then takes its
// turn: each attempt is refused and named in its attempt's record, and
// the debate goes on to its end.
func TestSandboxHostileDebater(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 2,
		scripts: map[string]string{"b": "sign: true"}})
	needLandlock(t, d)
	home := hostileDir(t, d)
	at := attack{
		reads: []string{filepath.Join(home, ".ssh", "id_ed25519"), d.path("other.walkie.md"), d.path(".walkie/other/log.jsonl"),
			d.path(".walkie/d/log.jsonl"), d.path(".walkie/d/snapshot.md"), "/proc/1/environ", "/proc/{ppid}/environ"},
		writes: []string{d.path("outside.txt"), d.path(".walkie/d/log.jsonl"),
			d.path("other.walkie.md"), filepath.Join(home, ".bashrc")},
		allowed: []string{"read:" + d.path("briefing.md")},
	}
	d.write("a.yaml", at.script()+"sign: true\n")
	before := map[string][]byte{}
	for _, p := range []string{"other.walkie.md", ".walkie/d/log.jsonl", ".walkie/other/log.jsonl"} {
		before[p] = d.read(p)
	}
	d.auto(0)
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "accepted")
	at.check(t, "a", string(d.read(filepath.Join(".walkie/d", recs[0].Transcript.Text))), recs[0].Sandbox)
	for _, p := range []string{"outside.txt", filepath.Join(home, ".bashrc")} {
		if _, err := os.Stat(d.path(p)); err == nil && !filepath.IsAbs(p) {
			t.Errorf("%s was written", p)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".bashrc")); err == nil {
		t.Error("the HOME's .bashrc was written")
	}
	if b := d.read("other.walkie.md"); string(b) != string(before["other.walkie.md"]) {
		t.Errorf("the other debate's record changed:\n%s", b)
	}
	if b := d.read(".walkie/other/log.jsonl"); string(b) != string(before[".walkie/other/log.jsonl"]) {
		t.Errorf("the other debate's state changed:\n%s", b)
	}
	if strings.Contains(string(d.read(".walkie/d/log.jsonl")), "forged_by") {
		t.Error("a forged line got into the debate's state or log")
	}
	d.verify(2)
	d.noProcessesLeft()
}

// The round table's roles, each hostile: the research phase, the
// implementer, a reviewer and the grader try what their roles may not
// reach and do their part; each attempt is refused and named in the
// record (the log, grader.json), the grader alone reads the hidden
// tests, and the table converges.
func TestSandboxHostileRoundTable(t *testing.T) {
	parts := []string{"ada", "brook", "gem"}
	d := newDebate(t, setup{participants: parts})
	needLandlock(t, d)
	home := hostileDir(t, d)
	// A reviewer and a phase work in copies of their own.
	absoluteFakes(d, parts, d.path("grader.yaml"))
	must(t, os.MkdirAll(d.path("work"), 0o755))
	must(t, os.MkdirAll(d.path("hidden"), 0o755))
	forbidden := attack{
		reads: []string{filepath.Join(home, ".ssh", "id_ed25519"), d.path("other.walkie.md"), d.path(".walkie/rt/log.jsonl"),
			"/proc/1/environ", "/proc/{ppid}/environ"},
		writes: []string{d.path("outside.txt"), d.path(".walkie/rt/log.jsonl")},
	}
	withHidden := forbidden
	withHidden.reads = append(slices.Clone(forbidden.reads), d.path("hidden/grade.sh"))
	impl, rev, phase := withHidden, withHidden, withHidden
	impl.allowed = []string{"write:" + d.path("work/notes.txt")}
	grader := forbidden
	grader.allowed = []string{"read:" + d.path("hidden/grade.sh")}
	d.write("ada.yaml", impl.script())
	d.write("brook.yaml", rev.script()+"behavior: verdict\n")
	d.write("gem.yaml", phase.script()+"behavior: write\nbody: \"The rules, researched.\"\n")
	d.write("grader.yaml", grader.script()+"behavior: none\n")
	d.write("hidden/grade.sh", "exec fakeagent --file /dev/null --agent grader --script \"$1\"\n")
	d.MustRun(0, "init", "rt.walkie.md", "--briefing", "briefing.md", "--implementer", "ada", "--reviewers", "brook", "--phases", "research=gem",
		// exec: the fake grader is the session's first process, whose
		// parent ({ppid}) is walkie.
		"--grader", "exec sh {dir}/hidden/grade.sh "+d.path("grader.yaml"), "--workspace", "work", "--max-rounds", "2")
	d.name, d.id = "rt.walkie.md", "rt"
	d.auto(0)
	recs := d.turns()
	roles := map[string]attack{"research": phase, "implementer": impl, "reviewer": rev}
	seen := map[string]bool{}
	for _, rec := range recs {
		at, ok := roles[rec.Role]
		if !ok || seen[rec.Role] {
			continue
		}
		seen[rec.Role] = true
		at.check(t, rec.Role, string(d.read(filepath.Join(".walkie/rt", rec.Transcript.Text))), rec.Sandbox)
	}
	if len(seen) != len(roles) {
		t.Errorf("roles seen %v in\n%s", seen, blackbox.Dump(recs))
	}
	var g struct {
		Status  string            `json:"status"`
		Log     string            `json:"log"`
		Sandbox *blackbox.Sandbox `json:"sandbox"`
	}
	must(t, json.Unmarshal(d.read(".walkie/rt/roundtable/round-1/grader.json"), &g))
	if g.Status != "pass" {
		t.Fatalf("grader %s", g.Status)
	}
	grader.check(t, "grader", string(d.read(filepath.Join(".walkie/rt", g.Log))), g.Sandbox)
	if s := string(d.read(".walkie/rt/log.jsonl")); strings.Contains(s, "forged_by") {
		t.Errorf("a forged line got into the state: %s", s)
	}
	d.verify(2)
	d.noProcessesLeft()
}

// The distiller of walkie brief distill works in its own folder: the
// record beside, the other debates and the HOME are refused to it.
func TestSandboxHostileDistiller(t *testing.T) {
	parts := []string{"a", "b", "dist"}
	d := newDebate(t, setup{participants: parts})
	needLandlock(t, d)
	home := hostileDir(t, d)
	// The distiller works in a folder of its own.
	absoluteFakes(d, parts)
	at := attack{
		reads:  []string{filepath.Join(home, ".ssh", "id_ed25519"), d.path("other.walkie.md"), d.path(".walkie/d/log.jsonl"), d.path("d.walkie.md")},
		writes: []string{d.path("outside.txt"), d.path(".walkie/d/log.jsonl")},
	}
	d.write("dist.yaml", at.script()+"behavior: write\nbody: \"## Question\\nWhich?\\n\"\n")
	d.write("chat.md", "We talked about which one to pick.\n")
	r := d.MustRun(0, "brief", "distill", d.name, "--from", "chat.md", "--agent", "dist", "--log-format", "json")
	var attempt struct {
		Msg     string            `json:"msg"`
		Sandbox *blackbox.Sandbox `json:"sandbox"`
	}
	for _, l := range strings.Split(r.Stderr, "\n") {
		if json.Unmarshal([]byte(l), &attempt) == nil && attempt.Msg == "distill attempt" {
			break
		}
	}
	if attempt.Sandbox == nil {
		t.Fatalf("no distill attempt with its sandbox in the log:\n%s", r.Stderr)
	}
	// The transcript is gone with the distillation's folder at approval;
	// what the record keeps is the refusals.
	for _, p := range append(slices.Clone(at.reads), at.writes...) {
		if !slices.Contains(attempt.Sandbox.Refused, p) {
			t.Errorf("the attempt's record does not name %s as refused: %q", p, attempt.Sandbox.Refused)
		}
	}
	if !strings.Contains(string(d.read(d.name)), "Which?") {
		t.Errorf("the briefing was not written:\n%s", d.read(d.name))
	}
}

// With Landlock unavailable (simulated), auto says so once for the whole
// run and the debate runs; required refuses to start, exit 2, naming the
// line that requires it.
func TestSandboxUnavailable(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 2})
	d.Env = append(d.Env, "WALKIE_LANDLOCK_ABI=0")
	r := d.auto(10)
	if n := strings.Count(r.Stderr, "Landlock is not available"); n != 1 {
		t.Errorf("said %d times that Landlock is missing, want once for 4 sessions:\n%s", n, r.Stderr)
	}
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "accepted", "accepted", "accepted")
	if sb := recs[0].Sandbox; sb == nil || sb.Kind != "" || len(sb.Missing) != 1 {
		t.Errorf("the record's sandbox: %+v, want none applied and what is missing", sb)
	}

	req := newDebate(t, setup{participants: []string{"a", "b"}, defaults: map[string]string{"sandbox": "required"}})
	req.Env = append(req.Env, "WALKIE_LANDLOCK_ABI=0")
	r = req.auto(2)
	if !strings.Contains(r.Stderr, "walkie.yaml:") || !strings.Contains(r.Stderr, "defaults.sandbox: required, and a cannot start") ||
		!strings.Contains(r.Stderr, "set it to auto") {
		t.Errorf("required without Landlock:\n%s", r.Stderr)
	}
	if recs := req.turns(); len(recs) != 0 {
		t.Errorf("an attempt ran: %s", blackbox.Dump(recs))
	}
}

// Issue 27, item 5: an agent that runs walkie extend from its own session
// (965 turns in 15 s on a 2-round cap, before) is refused, however it
// sheds the session's marker: the variable unset, a session of its own,
// and, under the sandbox, a detached process that left its ancestry too.
// The debate ends at its cap.
func TestAgentCannotLiftItsCap(t *testing.T) {
	lift := `walkie extend {file} --rounds 50; env -u WALKIE_SESSION walkie extend {file} --rounds 50; setsid -w walkie extend {file} --rounds 50; `
	detached := `(env -u WALKIE_SESSION setsid sh -c 'sleep 0.2; walkie extend {file} --rounds 50 > {out} 2>&1' &); sleep 1; cat {out}; `
	for _, c := range []struct {
		name, sandbox, shell string
	}{
		{"sandboxed", "auto", lift + detached},
		// Without the sandbox the markers alone hold: a process that left
		// both its environment and its ancestry is not seen (docs say so).
		{"unsandboxed", "off", lift},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 2, defaults: map[string]string{"sandbox": c.sandbox}})
			if c.sandbox != "off" {
				needLandlock(t, d)
			}
			shell := strings.NewReplacer("{file}", d.path(d.name), "{out}", d.path("fake/detached.out")).Replace(c.shell)
			d.write("a.yaml", fmt.Sprintf("shell: %q\n", shell+"true"))
			r := d.auto(10)
			if !strings.Contains(r.Stdout, "max-rounds") {
				t.Errorf("stdout:\n%s", r.Stdout)
			}
			recs := d.turns()
			d.wantOutcomes(recs, "accepted", "accepted", "accepted", "accepted")
			if st := d.state(); st.ExtraRounds != 0 {
				t.Errorf("the agent raised its own cap by %d", st.ExtraRounds)
			}
			text := string(d.read(filepath.Join(".walkie/d", recs[0].Transcript.Text)))
			if n := strings.Count(text, "extend refused: run from inside an agent's session"); n != 3 {
				t.Errorf("%d of 3 attempts refused for the session's markers:\n%s", n, text)
			}
			if c.sandbox != "off" && !strings.Contains(text, "extend refused: the debate's state cannot be changed from here") {
				t.Errorf("the detached attempt was not refused by the sandbox:\n%s", text)
			}
			d.verify(4)
			d.noProcessesLeft()
		})
	}
}
