//go:build temporal

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/temporal"
	"github.com/walkie-sh/walkie/walkie"
)

// A debate walkie serve --engine temporal runs, with a turn out on a
// remote worker and the home down (no lock held): walkie auto, turn and
// watch --once refuse it with exit 3, naming the debate, the home and the
// fix, and touch nothing; --take-over takes it back, recovering the
// remote turn as interrupted, after which it is an ordinary debate.
func TestHomedDebateIsRefusedUntilTakenOver(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "h.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{ID: "homed", Participants: []string{"a", "b"}, MaxRounds: 2,
		Briefing: []byte("Decide the thing.\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	agent := `[sh, -c, 'printf "\n## Turn %s · %s\nA turn.\n" "$1" "$2" >> "$3"', sh, "{turn}", "{agent}", "{file}"]`
	cfgPath := filepath.Join(dir, "walkie.yaml")
	y := "defaults:\n  home: inherit\n  grace: 100ms\n  kill_grace: 500ms\n  timeout: 20s\nagents:\n  a:\n    command: " + agent + "\n  b:\n    command: " + agent + "\n"
	if err := os.WriteFile(cfgPath, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}

	// What the home does: mark the debate as it starts the workflow, then
	// decide and begin turn 1, which goes out to a worker.
	stateDir := walkie.StateDir(file, "homed")
	if err := controller.MarkHome(stateDir, controller.HomeMark{Engine: temporal.EngineName, Queue: "walkie-home-box-1234abcd",
		Host: "box", PID: 4242, Since: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	hm, err := controller.OpenHome(controller.Options{File: file, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	step, err := hm.Decide()
	if err != nil || step.Action != controller.ActRun {
		t.Fatalf("the home decided %+v, %v; want a turn to run", step, err)
	}
	if _, err := hm.Begin(controller.TurnRef{Turn: step.Turn, Round: step.Round, Participant: step.Participant, Attempt: step.Attempt}); err != nil {
		t.Fatal(err)
	}
	hm.Close()
	record, state := readAll(t, file), readAll(t, filepath.Join(stateDir, walkie.LogFile))

	for _, args := range [][]string{{"auto", file}, {"turn", file}, {"watch", "--once", dir}} {
		code, stdout, stderr := walkieCmd(t, "", append(args, "--config", cfgPath)...)
		out := stdout + stderr
		if code != 3 {
			t.Errorf("walkie %s: exit %d, want 3\n%s", args[0], code, out)
		}
		for _, want := range []string{file, "debate homed", "walkie serve --engine temporal", "walkie-home-box-1234abcd", "walkie halt " + file,
			"temporal workflow terminate --workflow-id homed", "walkie auto --take-over " + file} {
			if !strings.Contains(out, want) {
				t.Errorf("walkie %s does not say %q:\n%s", args[0], want, out)
			}
		}
	}
	if !bytes.Equal(readAll(t, file), record) || !bytes.Equal(readAll(t, filepath.Join(stateDir, walkie.LogFile)), state) {
		t.Error("a refused command changed the record or the state")
	}
	if recs, err := engine.ReadTurnLog(stateDir); err != nil || len(recs) != 0 {
		t.Errorf("a refused command logged %v (%v)", recs, err)
	}

	// The home is gone for good: take the debate back.
	if code, stdout, stderr := walkieCmd(t, "", "turn", "--take-over", file, "--config", cfgPath); code != 0 {
		t.Fatalf("walkie turn --take-over: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(stateDir, controller.HomeFile)); !os.IsNotExist(err) {
		t.Errorf("the home's mark is still there after --take-over: %v", err)
	}
	recs, err := engine.ReadTurnLog(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []walkie.Outcome
	for _, r := range recs {
		got = append(got, r.Outcome)
	}
	if !slices.Equal(got, []walkie.Outcome{walkie.OutcomeInterrupted, walkie.OutcomeAccepted}) || recs[1].Turn != 1 {
		t.Fatalf("after the take-over the log holds %v, want turn 1 interrupted (the remote attempt), then accepted", got)
	}
	// An ordinary debate again: no flag needed.
	if code, stdout, stderr := walkieCmd(t, "", "watch", "--once", dir, "--config", cfgPath); code != 0 {
		t.Fatalf("walkie watch --once after the take-over: exit %d\n%s%s", code, stdout, stderr)
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
