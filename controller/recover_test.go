package controller

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// These tests stop a controller at the points a SIGKILL can hit between
// writes, by doing by hand what it had done by then, and check that the
// next Run makes the record whole and logs every attempt exactly once.

// crashedDebate is a debate with turn 1 recorded, and a controller that
// died after beginning turn 2 (b's first attempt).
func crashedDebate(t *testing.T) (file string, cfg *config.Config, c *controller, p *plan) {
	t.Helper()
	file, cfg = testDebate(t, 1, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	if _, err := walkie.Append(file, walkie.Post{From: "a", Body: []byte("Turn one.\n")}); err != nil {
		t.Fatal(err)
	}
	c, err := newController(Options{File: file, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c.tries = map[int]int{}
	agent, err := cfg.Agent("b")
	if err != nil {
		t.Fatal(err)
	}
	p = &plan{Decision: Decision{Turn: 2, Round: 1, Participant: "b", Agent: agent}, attempt: 1}
	if _, _, err := c.begin(p, session.NewID()); err != nil {
		t.Fatal(err)
	}
	return file, cfg, c, p
}

// stampTurn does what the crashed controller's settle did next: b's
// whole turn appended and stamped in the record, nothing logged.
func stampTurn(t *testing.T, file string, p *plan) walkie.Settled {
	t.Helper()
	snapshot := readFile(t, file)
	appendText(t, file, "\n## Turn 2 · b\nA whole turn.\n")
	s, err := walkie.Settle(file, snapshot, walkie.Expect{Turn: p.Turn, Agent: p.Participant}, "")
	if err != nil || s.Outcome != walkie.VerdictAccepted {
		t.Fatalf("settle: %v %+v", err, s.Verdict)
	}
	return s
}

func appendText(t *testing.T, file, text string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func outcomesOf(recs []TurnRecord) []walkie.Outcome {
	var out []walkie.Outcome
	for _, r := range recs {
		out = append(out, r.Outcome)
	}
	return out
}

func runAgain(t *testing.T, file string, cfg *config.Config) Summary {
	t.Helper()
	sum, err := Run(context.Background(), Options{File: file, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Verify(); err != nil {
		t.Fatalf("the record does not verify after recovery: %v", err)
	}
	if st := loadState(t, file); st.Running != nil {
		t.Errorf("running attempt left: %+v", st.Running)
	}
	return sum
}

// Killed while the agent had written half a turn: the text is discarded
// and kept, the attempt logged as interrupted (not counted), the turn run
// again as attempt 2.
func TestRecoverHalfWrittenTurn(t *testing.T) {
	file, cfg, _, _ := crashedDebate(t)
	before := readFile(t, file)
	appendText(t, file, "\n## Turn 2 · b\nhalf a tho")
	sum := runAgain(t, file, cfg)
	recs := turnLog(t, file)
	if got := outcomesOf(recs); !slices.Equal(got, []walkie.Outcome{walkie.OutcomeInterrupted, walkie.OutcomeAccepted}) {
		t.Fatalf("outcomes %v", got)
	}
	if r := recs[0]; r.Turn != 2 || r.Attempt != 1 || r.Kept == "" || r.Round != 1 {
		t.Errorf("interrupted attempt %+v", r)
	} else if kept := readFile(t, filepath.Join(stateDir(t, file), r.Kept)); !bytes.Contains(kept, []byte("half a tho")) {
		t.Errorf("kept version:\n%s", kept)
	}
	if recs[1].Attempt != 2 || sum.Turns != 2 || !bytes.HasPrefix(readFile(t, file), before) {
		t.Errorf("rerun %+v, %d turns", recs[1], sum.Turns)
	}
	if st := loadState(t, file); len(st.Attempts) != 0 {
		t.Errorf("the interrupted attempt counted: %v", st.Attempts)
	}
}

// Killed after logging a failed attempt, before writing its outcome into
// the state: it is counted once, not logged again.
func TestRecoverLoggedNotApplied(t *testing.T) {
	file, cfg, c, p := crashedDebate(t)
	st := loadState(t, file)
	code := 3
	rec := TurnRecord{Turn: 2, Round: 1, Agent: "b", Role: "participant", Attempt: 1, Started: st.Running.Started,
		Ended: time.Now(), ExitCode: &code, Outcome: walkie.OutcomeCrashed, Detail: "exit code 3 without a valid turn"}
	if err := engine.AppendTurnLog(c.dir, rec); err != nil {
		t.Fatal(err)
	}
	_ = p
	runAgain(t, file, cfg)
	recs := turnLog(t, file)
	if got := outcomesOf(recs); !slices.Equal(got, []walkie.Outcome{walkie.OutcomeCrashed, walkie.OutcomeAccepted}) {
		t.Fatalf("outcomes %v", got)
	}
	if recs[1].Attempt != 2 {
		t.Errorf("the retry is attempt %d", recs[1].Attempt)
	}
}

// Killed after the turn was stamped, before it was logged: it is logged
// as accepted, found on restart, and the debate goes on from there.
func TestRecoverStampedNotLogged(t *testing.T) {
	file, cfg, _, p := crashedDebate(t)
	stampTurn(t, file, p)
	sum := runAgain(t, file, cfg)
	recs := turnLog(t, file)
	if got := outcomesOf(recs); !slices.Equal(got, []walkie.Outcome{walkie.OutcomeAccepted}) {
		t.Fatalf("outcomes %v", got)
	}
	if r := recs[0]; r.Turn != 2 || r.Seq != 2 || !strings.Contains(r.Detail, "found on restart") {
		t.Errorf("record %+v", r)
	}
	if sum.Turns != 2 || sum.Status != walkie.StatusMaxRounds {
		t.Errorf("summary %+v", sum)
	}
}

// The snapshot is written without fsync; after a machine crash it may be
// damaged. The record's own prefix stands in for it when it is intact.
func TestRecoverDamagedSnapshot(t *testing.T) {
	file, cfg, _, _ := crashedDebate(t)
	st := loadState(t, file)
	if err := os.WriteFile(st.Running.Snapshot, []byte("---\nwalkie: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	appendText(t, file, "\n## Turn 2 · b\nhalf")
	runAgain(t, file, cfg)
	if got := outcomesOf(turnLog(t, file)); !slices.Equal(got, []walkie.Outcome{walkie.OutcomeInterrupted, walkie.OutcomeAccepted}) {
		t.Fatalf("outcomes %v", got)
	}
}

// With the snapshot damaged and the record changed above the turn, there
// is nothing trustworthy to restore: Run refuses and says what to do.
func TestRecoverDamagedSnapshotTamperedRecord(t *testing.T) {
	file, cfg, _, _ := crashedDebate(t)
	st := loadState(t, file)
	if err := os.Remove(st.Running.Snapshot); err != nil {
		t.Fatal(err)
	}
	b := readFile(t, file)
	if err := os.WriteFile(file, bytes.Replace(b, []byte("Turn one."), []byte("Turn 1!!."), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{File: file, Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "walkie verify") {
		t.Fatalf("err %v", err)
	}
	if loadState(t, file).Running == nil {
		t.Error("the running attempt was cleared though nothing was recovered")
	}
}

// Issue 12, item 2: killed after a turn was stamped and before state.json
// was written, then killed again during the next turn. The first restart
// logged the turn but left last_seq/last_hash and the doorbell behind; the
// second could then not trust the snapshot ("missing or damaged") and
// every later run failed, while verify said ok and repair had nothing to
// do. Recovery must leave the state as an uninterrupted run would, and the
// debate must finish.
func TestRecoverTwoCrashes(t *testing.T) {
	file, cfg := testDebate(t, 3, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	if _, err := walkie.Append(file, walkie.Post{From: "a", Body: []byte("Turn one.\n")}); err != nil {
		t.Fatal(err)
	}
	dir := stateDir(t, file)
	begin := func(turn int, who string) (*controller, []byte) {
		t.Helper()
		c, err := newController(Options{File: file, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		c.tries = map[int]int{}
		a, err := cfg.Agent(who)
		if err != nil {
			t.Fatal(err)
		}
		snapshot, _, err := c.begin(&plan{Decision: Decision{Turn: turn, Round: (turn + 1) / 2, Participant: who, Agent: a}, attempt: 1}, session.NewID())
		if err != nil {
			t.Fatal(err)
		}
		return c, snapshot
	}
	// Crash 1: turn 2 stamped, its end not logged, the doorbell not
	// written (a machine crash lost it).
	_, snapshot := begin(2, "b")
	sigBefore := readFile(t, filepath.Join(dir, "signal.json"))
	appendText(t, file, "\n## Turn 2 · b\nA whole turn.\n")
	if s, err := walkie.Settle(file, snapshot, walkie.Expect{Turn: 2, Agent: "b"}, ""); err != nil || s.Outcome != walkie.VerdictAccepted {
		t.Fatalf("settle: %v %+v", err, s.Verdict)
	}
	if err := os.WriteFile(filepath.Join(dir, "signal.json"), sigBefore, 0o644); err != nil {
		t.Fatal(err)
	}
	// The restart recovers (and here only recovers: Once after the
	// recovered turn, the next look comes later).
	c, err := newController(Options{File: file, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := walkie.TryRunLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.recover(); err != nil {
		t.Fatal(err)
	}
	lock.Unlock()
	d := loadDoc(t, file)
	st := loadState(t, file)
	if p := d.Progress(); st.LastSeq != p.Seq || st.LastHash != p.Hash || st.Running != nil {
		t.Fatalf("after recovery the state is behind the record: last_seq %d/%d, running %+v", st.LastSeq, p.Seq, st.Running)
	}
	if sig, err := walkie.LoadSignal(dir); err != nil || sig.Seq != 2 || sig.Turn != "a" {
		t.Fatalf("the doorbell after recovery: %+v %v", sig, err)
	}
	// Crash 2: during turn 3, half a turn written.
	begin(3, "a")
	appendText(t, file, "\n## Turn 3 · a\nhalf")
	sum := runAgain(t, file, cfg)
	if sum.Status != walkie.StatusMaxRounds || sum.Turns != 6 {
		t.Fatalf("the debate did not finish after two crashes: %+v", sum)
	}
	if got := outcomesOf(turnLog(t, file)); !slices.Equal(got, []walkie.Outcome{walkie.OutcomeAccepted, walkie.OutcomeInterrupted,
		walkie.OutcomeAccepted, walkie.OutcomeAccepted, walkie.OutcomeAccepted, walkie.OutcomeAccepted}) {
		t.Errorf("outcomes %v", got)
	}
}

func loadDoc(t *testing.T, file string) *walkie.Doc {
	t.Helper()
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A note posted while the controller was gone (its attempt still recorded
// as running) was acknowledged: recovery keeps it, where restoring the
// snapshot taken before the attempt would erase it.
func TestRecoverKeepsWhatWasPostedMeanwhile(t *testing.T) {
	file, cfg, _, _ := crashedDebate(t)
	rc, err := walkie.Append(file, walkie.Post{Supervisor: true, Body: []byte("Posted while no controller ran.\n")})
	if err != nil || rc.Queued {
		t.Fatalf("note: %+v %v", rc, err)
	}
	runAgain(t, file, cfg)
	if !strings.Contains(string(readFile(t, file)), "Posted while no controller ran.") {
		t.Fatal("recovery erased a note that walkie post had acknowledged")
	}
}
