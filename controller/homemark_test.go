package controller

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// A homed debate with the home's attempt out: Recover (serve, watch)
// refuses it and leaves the attempt; TakeOver is refused while the home
// holds the lock, and once it does not, the attempt is a dead
// controller's to recover.
func TestHomedDebateIsTheHomes(t *testing.T) {
	file, cfg, c, _ := crashedDebate(t)
	if err := MarkHome(c.dir, HomeMark{Engine: "temporal", Queue: "q", Host: "h", PID: 1}); err != nil {
		t.Fatal(err)
	}
	var he *HomedError
	if _, err := Recover(Options{File: file, Config: cfg}); !errors.As(err, &he) || he.ID != filepath.Base(c.dir) || !errors.Is(err, ErrBadInput) {
		t.Fatalf("Recover: %v, want a HomedError (bad input to the daemon)", err)
	}
	if loadState(t, file).Running == nil {
		t.Fatal("the refused Recover cleared the home's attempt")
	}
	if err := Homed(file); !errors.As(err, &he) {
		t.Errorf("Homed: %v", err)
	}

	lock, err := walkie.TryRunLock(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := TakeOver(Options{File: file, Config: cfg}); !errors.Is(err, walkie.ErrLocked) {
		t.Errorf("TakeOver while the home holds the debate: %v, want ErrLocked", err)
	}
	lock.Unlock()
	if _, err := os.Stat(filepath.Join(c.dir, HomeFile)); err != nil {
		t.Fatalf("a refused take-over removed the mark: %v", err)
	}

	if err := TakeOver(Options{File: file, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	if err := Homed(file); err != nil {
		t.Errorf("Homed after the take-over: %v", err)
	}
	if done, err := Recover(Options{File: file, Config: cfg}); err != nil || !done {
		t.Fatalf("Recover after the take-over: %v, %v", done, err)
	}
	if got := outcomesOf(turnLog(t, file)); len(got) != 1 || got[0] != walkie.OutcomeInterrupted {
		t.Errorf("logged %v, want the home's attempt interrupted", got)
	}
}
