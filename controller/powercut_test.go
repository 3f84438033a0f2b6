package controller

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// A power cut just after a turn: the record's entry is synced, and the
// log's "ended" line, its last, is cut at a byte of it, or its tail is
// zeros of some length (a file system that grew the file and lost the
// data). Whatever is left, the next run finds turn 2 stamped and either
// its end logged (the line whole) or the attempt still running (the line
// torn, never acknowledged): it logs the end once, runs nothing again,
// and the record verifies.
func TestRecoverPowerCutOnTheEndedLine(t *testing.T) {
	file, cfg, c, p := crashedDebate(t)
	s := stampTurn(t, file, p)
	st := loadState(t, file)
	rec := TurnRecord{Seq: 2, Turn: 2, Round: 1, Agent: "b", Role: "participant", Attempt: 1, Started: st.Running.Started,
		Ended: time.Now(), Outcome: walkie.OutcomeAccepted}
	if err := c.logEnded(1, rec, &s); err != nil {
		t.Fatal(err)
	}
	c.close()
	dir := stateDir(t, file)
	logPath := filepath.Join(dir, walkie.LogFile)
	record, whole := readFile(t, file), readFile(t, logPath)
	last := bytes.LastIndexByte(whole[:len(whole)-1], '\n') + 1
	var tails [][]byte
	for k := 0; k <= len(whole)-last; k++ {
		tails = append(tails, whole[:k+last])
	}
	for z := 1; z <= len(whole)-last+8; z++ {
		b := append([]byte(nil), whole[:last]...)
		tails = append(tails, append(b, make([]byte, z)...))
	}
	for _, tail := range tails {
		if err := os.WriteFile(file, record, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(logPath, tail, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(filepath.Join(dir, "checkpoint.json"))
		sum := runAgain(t, file, cfg)
		var turn2 []TurnRecord
		for _, r := range turnLog(t, file) {
			if r.Turn == 2 {
				turn2 = append(turn2, r)
			}
		}
		if len(turn2) != 1 || turn2[0].Outcome != walkie.OutcomeAccepted || turn2[0].Seq != 2 || turn2[0].Attempt != 1 {
			t.Fatalf("log of %d bytes (whole: %d): turn 2's attempts %+v", len(tail), len(whole), turn2)
		}
		if sum.Turns != 2 || sum.Status != walkie.StatusMaxRounds {
			t.Fatalf("log of %d bytes: summary %+v", len(tail), sum)
		}
		if st := loadState(t, file); st.LastSeq < 2 {
			t.Fatalf("log of %d bytes: the log's last entry %d", len(tail), st.LastSeq)
		}
	}
}
