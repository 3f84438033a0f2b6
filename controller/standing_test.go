package controller

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// post appends turns by the participants in order, signing those marked.
func post(t *testing.T, file string, turns ...string) {
	t.Helper()
	for _, who := range turns {
		name, signed := strings.CutSuffix(who, "+")
		if _, err := walkie.Append(file, walkie.Post{From: name, Body: []byte("A turn by " + name + ".\n"), Sign: signed}); err != nil {
			t.Fatalf("post by %s: %v", name, err)
		}
	}
}

func standing(t *testing.T, file string) Standing {
	t.Helper()
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadStanding(d, StandingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The cap a person reads of an ended debate is the one it held, its
// extension included, although the extension ended with it: before, a
// debate capped at 1 and extended by 2 that converged in round 2 read
// "round 2 of 2", and one that hit its cap read "cap 1" on the page.
func TestStandingKeepsTheCapAnEndedDebateHeld(t *testing.T) {
	for _, c := range []struct {
		name   string
		turns  []string
		status string
		round  int
		reason string
	}{
		{"converged", []string{"a", "b", "a+", "b+"}, walkie.StatusConverged, 2, ""},
		{"at its cap", []string{"a", "b", "a", "b", "a", "b"}, walkie.StatusMaxRounds, 3, "reached its round cap of 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			file, _ := testDebate(t, 1, nil, "a", "b")
			if n, err := walkie.Extend(file, 2); err != nil || n != 3 {
				t.Fatalf("extend: %d, %v", n, err)
			}
			if s := standing(t, file); s.RoundCap != 3 || s.Round != 1 || s.Status != walkie.StatusOpen {
				t.Fatalf("before: round %d of %d, %s", s.Round, s.RoundCap, s.Status)
			}
			post(t, file, c.turns...)
			s := standing(t, file)
			if s.Status != c.status || s.Round != c.round || s.RoundCap != 3 || s.Reason != c.reason {
				t.Errorf("round %d of %d, %s (%q); want round %d of 3, %s (%q)", s.Round, s.RoundCap, s.Status, s.Reason, c.round, c.status, c.reason)
			}
			if st := loadState(t, file); st.ExtraRounds != 0 {
				t.Errorf("the extension outlived the debate: %+v", st)
			}
			rep, at, err := LoadReport(file, StandingOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.MaxRounds != 3 || rep.Status != c.status || at.RoundCap != rep.MaxRounds {
				t.Errorf("report: %s, %d of at most %d", rep.Status, rep.Rounds, rep.MaxRounds)
			}
			// Reopened (extend again), it starts from where it stands.
			if c.status == walkie.StatusMaxRounds {
				if n, err := walkie.Extend(file, 1); err != nil || n != 4 {
					t.Fatalf("extend again: %d, %v", n, err)
				}
				if s := standing(t, file); s.Status != walkie.StatusOpen || s.RoundCap != 4 || s.Round != 4 {
					t.Errorf("reopened: round %d of %d, %s", s.Round, s.RoundCap, s.Status)
				}
			}
		})
	}
}

// An attempt the state names as running is running only while a
// controller (or a remote engine's home) holds the debate: one a dead
// controller left reads as interrupted, with what to do.
func TestStandingTellsARunningAttemptFromAnInterruptedOne(t *testing.T) {
	file, _ := testDebate(t, 3, nil, "a", "b")
	dir := stateDir(t, file)
	dead := deadPID(t)
	_, _, err := walkie.UpdateState(file, walkie.OpState, func(_ *walkie.Meta, p walkie.Progress, s *walkie.State) error {
		s.Running = &walkie.Attempt{Turn: 1, Agent: "a", Number: 2, Started: time.Now().UTC(), ControllerPID: dead}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	s := standing(t, file)
	if s.Running == nil || !s.Running.Interrupted || s.Controller != nil {
		t.Fatalf("a dead controller's attempt: %+v, controller %+v", s.Running, s.Controller)
	}
	if !strings.Contains(s.Waiting, "turn 1 by a was interrupted") || !strings.Contains(s.Waiting, "walkie auto") {
		t.Errorf("waiting: %q", s.Waiting)
	}

	lock, err := walkie.TryRunLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	s = standing(t, file)
	lock.Unlock()
	if s.Running == nil || s.Running.Interrupted || s.Controller == nil || s.Controller.PID != os.Getpid() || s.Waiting != "" {
		t.Errorf("a held debate's attempt: %+v, controller %+v, waiting %q", s.Running, s.Controller, s.Waiting)
	}

	// A remote engine's home runs its turns with no lock held here.
	if err := MarkHome(dir, HomeMark{Engine: "temporal", Queue: "q", Host: "elsewhere", PID: dead}); err != nil {
		t.Fatal(err)
	}
	s = standing(t, file)
	if s.Running == nil || s.Running.Interrupted || s.Controller == nil || !s.Controller.Remote || s.Controller.Down {
		t.Errorf("a homed debate's attempt: %+v, controller %+v", s.Running, s.Controller)
	}
	host, _ := os.Hostname()
	if err := MarkHome(dir, HomeMark{Engine: "temporal", Queue: "q", Host: host, PID: dead}); err != nil {
		t.Fatal(err)
	}
	if s = standing(t, file); s.Controller == nil || !s.Controller.Down || s.Running.Interrupted {
		t.Errorf("a home of this machine that is gone: %+v, %+v", s.Controller, s.Running)
	}
}

// Between two sessions of a held debate, and with nobody running an open
// one, the standing says who runs it or what would.
func TestStandingWaiting(t *testing.T) {
	file, cfg := testDebate(t, 3, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	st := &walkie.State{}
	l := Look{Doc: d, State: st, Config: cfg, Now: time.Now()}
	s := Stand(l, Live{})
	if s.Action != ActRun || !strings.HasPrefix(s.Waiting, "no controller runs it now; turn 1 (round 1 of 3) is a's") {
		t.Errorf("nobody runs it: %s, %q", s.Action, s.Waiting)
	}
	s = Stand(l, Live{Held: true, Holder: 42, HolderBy: "walkie auto"})
	if s.Action != ActHeld || s.Waiting != "run by walkie auto, pid 42; between sessions" {
		t.Errorf("held: %s, %q", s.Action, s.Waiting)
	}
	// A spent budget Next has not written yet is the status already.
	st.CostUSD, cfg.BudgetUSD = 2, 1
	s = Stand(l, Live{})
	if s.Status != walkie.StatusOverBudget || !s.Decision.Record || s.Reason != "spent $2.00 of a $1.00 budget" || s.NextTurn != 0 || s.Whose != "" {
		t.Errorf("over budget: %+v", s)
	}
}

// deadPID is the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

// Issue 32 item 15: the standing says which controls a debate takes, and
// the commands agree with it: each control it leaves out is refused (or,
// for a halt of a debate that runs no turn anyway, changes nothing but
// the reason), each it offers is taken.
func TestStandingControls(t *testing.T) {
	setStatus := func(status string) func(t *testing.T, file string) {
		return func(t *testing.T, file string) {
			if _, _, err := walkie.UpdateState(file, walkie.OpState, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
				s.Status, s.Reason = status, "set by the test"
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, file string)
		want  walkie.Controls
	}{
		{"open", func(*testing.T, string) {}, walkie.Controls{Halt: true, Extend: true}},
		{"open, mid-debate", func(t *testing.T, file string) { post(t, file, "a") }, walkie.Controls{Halt: true, Extend: true}},
		{"halted", func(t *testing.T, file string) { must(t, walkie.Halt(file, "lunch")) }, walkie.Controls{Resume: true, Extend: true}},
		{"failed", setStatus(walkie.StatusFailed), walkie.Controls{Resume: true, Extend: true}},
		{"at its cap", func(t *testing.T, file string) { post(t, file, "a", "b") }, walkie.Controls{Extend: true}},
		{"converged", func(t *testing.T, file string) { post(t, file, "a+", "b+") }, walkie.Controls{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			file, _ := testDebate(t, 1, nil, "a", "b")
			c.setup(t, file)
			got := standing(t, file).Controls
			if got != c.want {
				t.Fatalf("controls %+v, want %+v", got, c.want)
			}
			var refused *walkie.RefusedError
			if err := walkie.Resume(file); (err == nil) != c.want.Resume || err != nil && !errors.As(err, &refused) {
				t.Errorf("resume: %v, offered %v", err, c.want.Resume)
			}
			if _, err := walkie.Extend(file, 1); (err == nil) != c.want.Extend || err != nil && !errors.As(err, &refused) {
				t.Errorf("extend: %v, offered %v", err, c.want.Extend)
			}
			if c.name == "converged" {
				if err := walkie.Halt(file, "late"); !errors.As(err, &refused) {
					t.Errorf("halt of a converged debate: %v", err)
				}
			}
		})
	}
}
