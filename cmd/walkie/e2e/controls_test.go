package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

// walkie halt while an agent hangs: the session ends within a second, the
// attempt is recorded as halted and does not count, auto exits 12.
func TestHaltMidTurn(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, scripts: map[string]string{"a": "behavior: hang"}})
	before := d.read(d.name)
	auto := d.Start("auto", d.name, "--approve")
	agent := d.waitRunning(auto, 1)
	d.MustRun(0, "halt", d.name, "--reason", "testing halt")
	halted := time.Now()
	r := auto.Wait(30 * time.Second)
	if r.Code != 12 {
		t.Fatalf("auto exit %d, want 12\n%s", r.Code, r.Stderr)
	}
	if took := time.Since(halted); took > time.Second {
		t.Errorf("auto exited %s after walkie halt", took)
	}
	recs := d.turns()
	d.wantOutcomes(recs, "halted")
	if rec := recs[0]; rec.EndedBy != "controller" || rec.Signal != "SIGTERM" {
		t.Errorf("halted attempt: %s", rec)
	}
	if blackbox.Alive(agent) {
		t.Errorf("the agent (pid %d) is still alive", agent)
	}
	st := d.state()
	if st.Status != "halted" || st.Reason != "testing halt" || st.Running != nil || len(st.Attempts) != 0 {
		t.Errorf("state: %s (%s) running=%v attempts=%v", st.Status, st.Reason, st.Running, st.Attempts)
	}
	if after := d.read(d.name); !bytes.Equal(after[bytes.Index(after, []byte("# Briefing")):], before[bytes.Index(before, []byte("# Briefing")):]) {
		t.Errorf("the record changed:\n%s", after)
	}
	d.noProcessesLeft()
}

// At the cap, walkie extend lets the same debate go on: auto is simply
// run again.
func TestExtendAfterMaxRounds(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1,
		scripts: map[string]string{"a": "sign_from: 2", "b": "sign_from: 2"}})
	d.auto(10)
	d.wantOutcomes(d.turns(), "accepted", "accepted")
	d.MustRun(0, "extend", d.name, "--rounds", "1")
	d.auto(0)
	d.wantOutcomes(d.turns(), "accepted", "accepted", "accepted", "accepted")
	d.verify(4)
	if st := d.state(); st.ExtraRounds != 0 {
		t.Errorf("the extension outlived the debate: extra_rounds %d", st.ExtraRounds)
	}
	d.noProcessesLeft()
}

// walkie extend during the last turn before the cap: the running auto sees
// it before the next turn and carries on, without a restart.
func TestExtendWhileRunning(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1, scripts: map[string]string{
		"a": "sign_from: 2",
		// b's first turn, the last before the cap, takes long enough for
		// the extension to land while it runs.
		"b": "sign_from: 2\nsteps:\n  - delay: 2s\n  - {}",
	}})
	auto := d.Start("auto", d.name, "--approve")
	d.waitRunning(auto, 2)
	d.MustRun(0, "extend", d.name, "--rounds", "1")
	if st := d.state(); st.Running == nil || st.Running.Turn != 2 {
		t.Fatalf("turn 2 was over before the extension landed; the test proves nothing")
	}
	r := auto.Wait(30 * time.Second)
	if r.Code != 0 {
		t.Fatalf("auto exit %d, want 0 (converged in the extra round)\n%s", r.Code, r.Stderr)
	}
	d.wantOutcomes(d.turns(), "accepted", "accepted", "accepted", "accepted")
	d.verify(4)
	d.noProcessesLeft()
}

// SIGKILL the controller while its agent has written half a turn and left a
// grandchild holding the terminal; auto started again ends the old
// session's processes, records the attempt as interrupted, discards its
// text and runs the turn again: no turn lost, none counted twice.
func TestKillAndResume(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 2,
		// A long grace for b: only the SIGKILL ends its first session.
		agents: map[string]map[string]string{"b": {"grace": "30s"}},
		scripts: map[string]string{
			"a": "sign_from: 2",
			"b": "sign_from: 2\nsteps:\n  - {behavior: grandchild, pid_file: fake/grandchild.pid, hang_after: true}\n  - {}",
		}})
	auto := d.Start("auto", d.name, "--approve")
	agent := d.waitRunning(auto, 2)
	var grandchild int
	sessiontest.WaitFor(t, 20*time.Second, "the grandchild deaf to SIGHUP", func() bool {
		b, err := os.ReadFile(d.path("fake/grandchild.pid"))
		grandchild, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && grandchild > 0 && blackbox.Ignores(grandchild, syscall.SIGHUP)
	})
	sessiontest.WaitFor(t, 10*time.Second, "b's turn in the file", func() bool {
		return bytes.Contains(d.read(d.name), []byte("## Turn 2 · b"))
	})
	auto.Signal(syscall.SIGKILL)
	if r := auto.Wait(10 * time.Second); r.Code != -1 {
		t.Logf("killed auto: exit %d", r.Code)
	}
	if !blackbox.Alive(grandchild) {
		t.Fatalf("the grandchild %d died with the controller; the test proves nothing", grandchild)
	}
	if st := d.state(); st.Running == nil || st.Running.Turn != 2 {
		t.Fatalf("the killed controller left no running attempt: %+v", st.Running)
	}

	d.auto(0)
	if blackbox.Alive(agent) || blackbox.Alive(grandchild) {
		t.Errorf("processes of the killed session survived the restart: agent %v, grandchild %v", blackbox.Alive(agent), blackbox.Alive(grandchild))
	}
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "interrupted", "accepted", "accepted", "accepted")
	rec := recs[1]
	if rec.Turn != 2 || rec.Agent != "b" || rec.EndedBy != "controller" || rec.Kept == "" {
		t.Errorf("interrupted attempt: %s kept=%q", rec, rec.Kept)
	}
	if recs[2].Turn != 2 || recs[2].Attempt <= rec.Attempt {
		t.Errorf("the rerun of turn 2 is attempt %d after attempt %d", recs[2].Attempt, rec.Attempt)
	}
	if recs[1].Transcript.Raw == recs[2].Transcript.Raw {
		t.Errorf("two attempts share the transcript %s", recs[2].Transcript.Raw)
	}
	if _, err := os.Stat(filepath.Join(d.stateDir(), rec.Kept)); err != nil {
		t.Errorf("the discarded text was not kept: %v", err)
	}
	seen := map[int]int{}
	for _, r := range recs {
		if r.Outcome == "accepted" {
			seen[r.Turn]++
		}
	}
	for turn := 1; turn <= 4; turn++ {
		if seen[turn] != 1 {
			t.Errorf("turn %d accepted %d times\n%s", turn, seen[turn], blackbox.Dump(recs))
		}
	}
	d.verify(4)
	if st := d.state(); st.Running != nil || len(st.Attempts) != 0 {
		t.Errorf("state: running %v attempts %v", st.Running, st.Attempts)
	}
	d.noProcessesLeft()
}

// One SIGINT ends the running turn cleanly: recorded as interrupted, the
// record untouched, exit 130. Run again, auto carries on.
func TestSIGINT(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1,
		scripts: map[string]string{"a": "steps:\n  - behavior: hang\n  - {}"}})
	auto := d.Start("auto", d.name, "--approve")
	agent := d.waitRunning(auto, 1)
	d.waitInvoked("a", 1) // so that the rerun is a's second step
	auto.Signal(syscall.SIGINT)
	r := auto.Wait(10 * time.Second)
	if r.Code != 130 {
		t.Fatalf("auto exit %d after SIGINT, want 130\n%s", r.Code, r.Stderr)
	}
	if blackbox.Alive(agent) {
		t.Errorf("the agent %d survived", agent)
	}
	recs := d.turns()
	d.wantOutcomes(recs, "interrupted")
	if rec := recs[0]; rec.EndedBy != "controller" || rec.Signal != "SIGTERM" {
		t.Errorf("interrupted attempt: %s", rec)
	}
	if st := d.state(); st.Running != nil || len(st.Attempts) != 0 || st.Status != "" {
		t.Errorf("state: %s running %v attempts %v", st.Status, st.Running, st.Attempts)
	}
	d.verify(0)
	d.noProcessesLeft()

	d.auto(10)
	recs = d.turns()
	d.wantOutcomes(recs, "interrupted", "accepted", "accepted")
	if recs[1].Attempt != 2 {
		t.Errorf("the rerun is attempt %d", recs[1].Attempt)
	}
	d.verify(2)
	d.noProcessesLeft()
}

// A second controller on the same debate is refused while one runs.
func TestOneControllerPerDebate(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, scripts: map[string]string{"a": "behavior: hang"}})
	auto := d.Start("auto", d.name, "--approve")
	d.waitRunning(auto, 1)
	r := d.MustRun(3, "auto", d.name)
	if !strings.Contains(r.Stderr, "is already being run by another controller (pid ") || !strings.Contains(r.Stderr, "walkie follow "+d.name) || strings.Contains(r.Stderr, "bad input") {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
	d.MustRun(0, "halt", d.name)
	if r := auto.Wait(10 * time.Second); r.Code != 12 {
		t.Errorf("first auto: exit %d", r.Code)
	}
	d.noProcessesLeft()
}

// SIGTERM is handled like the first SIGINT.
func TestSIGTERM(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, scripts: map[string]string{"a": "behavior: hang"}})
	auto := d.Start("auto", d.name, "--approve")
	d.waitRunning(auto, 1)
	auto.Signal(syscall.SIGTERM)
	if r := auto.Wait(10 * time.Second); r.Code != 130 {
		t.Fatalf("auto exit %d after SIGTERM, want 130\n%s", r.Code, r.Stderr)
	}
	d.wantOutcomes(d.turns(), "interrupted")
	d.noProcessesLeft()
}

// An agent deaf to SIGTERM makes the first SIGINT wait out the kill
// grace; a second SIGINT exits at once. The next auto cleans up.
func TestSecondSIGINT(t *testing.T) {
	s := setup{participants: []string{"a", "b"}, maxRounds: 1,
		defaults: map[string]string{"kill_grace": "30s"},
		agents:   map[string]map[string]string{"a": {"command": `[sh, -c, "trap '' TERM; : > fake/deaf; while :; do sleep 1; done"]`}}}
	d := newDebate(t, s)
	auto := d.Start("auto", d.name, "--approve")
	d.waitRunning(auto, 1)
	// Deaf before the first SIGINT: a signal in the moment between its
	// start and its trap (the sandbox's trampoline, the shell's start)
	// would end it as any process.
	sessiontest.WaitFor(t, 10*time.Second, "the agent deaf to SIGTERM", func() bool { _, err := os.Stat(d.path("fake/deaf")); return err == nil })
	auto.Signal(syscall.SIGINT)
	sessiontest.WaitFor(t, 10*time.Second, "the first SIGINT acknowledged", func() bool {
		return strings.Contains(auto.Stderr(), "Ctrl-C again")
	})
	second := time.Now()
	auto.Signal(syscall.SIGINT)
	if r := auto.Wait(10 * time.Second); r.Code != 130 {
		t.Fatalf("auto exit %d after two SIGINTs, want 130\n%s", r.Code, r.Stderr)
	}
	if took := time.Since(second); took > 2*time.Second {
		t.Errorf("the second SIGINT took %s to exit", took)
	}
	if st := d.state(); st.Running == nil {
		t.Fatal("no running attempt left behind; the test proves nothing")
	}

	s.agents = nil
	d.configure(s)
	d.auto(10)
	recs := d.turns()
	d.wantOutcomes(recs, "interrupted", "accepted", "accepted")
	d.verify(2)
	d.noProcessesLeft()
}

// A supervisor note posted while an agent runs waits for its turn to be
// recorded, then goes in right after it.
func TestSupervisorNoteDuringTurn(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}, maxRounds: 1,
		defaults: map[string]string{"grace": "1s"},
		scripts:  map[string]string{"a": "hang_after: true"}})
	auto := d.Start("auto", d.name, "--approve")
	d.waitRunning(auto, 1)
	sessiontest.WaitFor(t, 10*time.Second, "a's turn in the file", func() bool {
		return bytes.Contains(d.read(d.name), []byte("## Turn 1 · a"))
	})
	d.write("note.txt", "Keep it short.\n")
	d.MustRun(0, "post", d.name, "--supervisor", "--body-file", "note.txt")
	if r := auto.Wait(30 * time.Second); r.Code != 10 {
		t.Fatalf("auto exit %d\n%s", r.Code, r.Stderr)
	}
	d.wantOutcomes(d.turns(), "accepted", "accepted")
	d.verify(2)
	b := d.read(d.name)
	turn1, note, turn2 := bytes.Index(b, []byte("## Turn 1 · a")), bytes.Index(b, []byte("## Supervisor")), bytes.Index(b, []byte("## Turn 2 · b"))
	if !(turn1 >= 0 && turn1 < note && note < turn2) {
		t.Errorf("the note is not between turn 1 and turn 2:\n%s", b)
	}
	d.noProcessesLeft()
}

// A record with bytes after its last entry is not run: exit 4, and the
// message says how to repair it.
func TestTornTailRefused(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"a", "b"}})
	d.write(d.name, string(d.read(d.name))+"\n## Turn 1 · a\nhalf a tu")
	r := d.auto(4)
	if !strings.Contains(r.Stderr, "walkie repair") {
		t.Errorf("stderr:\n%s", r.Stderr)
	}
	if recs := d.turns(); len(recs) != 0 {
		t.Errorf("attempts were made:\n%s", blackbox.Dump(recs))
	}
}
