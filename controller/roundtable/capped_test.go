package roundtable_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// A reviewer that leaves a gibibyte as its verdict (sparse: no disk) is
// malformed, with the file and the limit named; walkie reads no more of
// it than a verdict may hold, neither while the reviewer runs (the Ready
// check, on every quiet moment) nor after, and keeps only that much.
func TestRoundtableHugeVerdictIsNotRead(t *testing.T) {
	leakCheck(t)
	f := newRT(t)
	f.maxRounds = 1
	f.commands = map[string]string{"cy": `dd if=/dev/null of="$WALKIE_VERDICT" bs=1 seek=1073741824 2>/dev/null; sleep 1`}
	f.setup()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sum := f.run()
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 256<<20 {
		t.Errorf("the run allocated %d MiB; a verdict is read no further than its limit", n>>20)
	}
	if sum.Status != walkie.StatusFailed || !strings.Contains(sum.Reason, "cy (malformed)") {
		t.Fatalf("status %s (%s), want failed on cy's malformed verdict", sum.Status, sum.Reason)
	}
	cy := f.round(1).Reviews[1]
	if cy.Outcome != walkie.OutcomeMalformed || len(cy.Attempts) == 0 {
		t.Fatalf("cy %+v", cy)
	}
	for _, a := range cy.Attempts {
		if want := "verdict.json is 1073741824 bytes or more, over the limit of 262144"; !strings.Contains(a.Detail, want) {
			t.Errorf("attempt %d: detail %q, want it to say %q", a.Attempt, a.Detail, want)
		}
	}
	kept, err := filepath.Glob(filepath.Join(f.stateDir(), "roundtable", "round-1", "verdict-cy-*.json"))
	if err != nil || len(kept) == 0 {
		t.Fatalf("no kept verdict for cy: %v", err)
	}
	for _, k := range kept {
		if fi, err := os.Stat(k); err != nil || fi.Size() > 300<<10 {
			t.Errorf("%s: %v, %v: kept more than the limit", k, fi.Size(), err)
		}
	}
}
