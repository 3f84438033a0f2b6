package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

func TestTurnLogRoundTrip(t *testing.T) {
	dir := t.TempDir()
	code := 0
	started := time.Date(2026, 11, 30, 2, 0, 0, 123456789, time.FixedZone("X", 3600))
	in := TurnRecord{Seq: 1, Turn: 1, Round: 1, Agent: "a", Role: "participant", Attempt: 1, Started: started,
		Ended: started.Add(1500 * time.Millisecond), DurationMS: 1500, ExitCode: &code, Outcome: walkie.OutcomeAccepted,
		EndedBy: "self", Usage: &Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.01, CostSource: "reported"}, Signed: true}
	if err := AppendTurnLog(dir, in); err != nil {
		t.Fatal(err)
	}
	raw := readFile(t, filepath.Join(dir, walkie.LogFile))
	// RFC 3339 in UTC with milliseconds, as docs/controller.md's table of
	// the attempts says, in the attempt of an "ended" line.
	if !strings.Contains(string(raw), `"op":"ended"`) || !strings.Contains(string(raw), `"attempt":{"seq":1,`) ||
		!strings.Contains(string(raw), `"started":"2026-11-30T01:00:00.123Z"`) || !strings.Contains(string(raw), `"exit_code":0`) {
		t.Errorf("line: %s", raw)
	}
	out, err := ReadTurnLog(dir)
	if err != nil || len(out) != 1 {
		t.Fatalf("%v %v", out, err)
	}
	if got := out[0]; !got.Started.Equal(started.Truncate(time.Millisecond)) || got.ExitCode == nil || *got.ExitCode != 0 || got.Usage.CostUSD != 0.01 || !got.Signed {
		t.Errorf("read back %+v", got)
	}
	if _, ok := LoggedAttempt(dir, 1, 1, started); !ok {
		t.Error("loggedAttempt does not find the attempt by its start")
	}
	if _, ok := LoggedAttempt(dir, 1, 1, started.Add(time.Second)); ok {
		t.Error("loggedAttempt matched another start")
	}
}

// After a torn write, the next record is logged whole, and the torn
// bytes are skipped.
func TestAppendTurnLogAfterTornWrite(t *testing.T) {
	dir := t.TempDir()
	if err := AppendTurnLog(dir, TurnRecord{Turn: 1, Agent: "a", Attempt: 1, Outcome: walkie.OutcomeCrashed}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, walkie.LogFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"n":2,"op":"ended","attempt":{"turn":1,"agent":"a","outc`)
	f.Close()
	if err := AppendTurnLog(dir, TurnRecord{Turn: 1, Agent: "a", Attempt: 2, Outcome: walkie.OutcomeAccepted}); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadTurnLog(dir)
	if err != nil || len(recs) != 2 || recs[1].Attempt != 2 {
		t.Fatalf("%+v %v", recs, err)
	}
}

// A debate directory of layout 1 (before the log) reads its turns.jsonl
// as it was read then: a line cut short by a crash is skipped, other
// damage names its line.
func TestReadTurnLogLayout1(t *testing.T) {
	line := `{"turn":1,"round":1,"agent":"a","role":"participant","attempt":1,"started":"2026-11-30T02:00:00.000Z","ended":"2026-11-30T02:00:01.000Z","outcome":"accepted","signed":false}`
	for _, c := range []struct {
		name, content string
		n             int
		err           bool
	}{
		{"missing", "", 0, false},
		{"whole", line + "\n" + line + "\n", 2, false},
		{"torn last line", line + "\n" + line[:40], 1, false},
		{"torn last line with newline", line + "\n" + line[:40] + "\n", 1, false},
		{"blank lines", "\n" + line + "\n\n", 1, false},
		{"torn line in the middle", line + "\n" + line[:40] + "\n" + line + "\n", 2, false},
		{"damaged in the middle", line + "\n{oops}\n" + line + "\n", 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.name != "missing" {
				if err := os.WriteFile(filepath.Join(dir, "turns.jsonl"), []byte(c.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			recs, err := ReadTurnLog(dir)
			if len(recs) != c.n || (err != nil) != c.err {
				t.Errorf("%d records, err %v", len(recs), err)
			}
			if err != nil && !strings.Contains(err.Error(), "turns.jsonl:2") {
				t.Errorf("the error does not name the line: %v", err)
			}
		})
	}
}
