package controller

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// huge is the size of the sparse files these tests leave where an agent
// could: a gibibyte that costs no disk.
const huge = 1 << 30

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// An agent that left a gibibyte in the record before its controller died:
// recovery reads none of it, refuses with the file, the limit and the
// fix, and changes nothing; once the person cuts it back, the debate
// recovers and goes on.
func TestRecoverRefusesAHugeRecord(t *testing.T) {
	file, cfg, _, _ := crashedDebate(t)
	appendText(t, file, "\n## Turn 2 · b\nhalf a tho")
	if err := os.Truncate(file, huge); err != nil {
		t.Fatal(err)
	}
	size := loadState(t, file).Running.Size
	var err error
	if n := allocated(func() { _, err = Run(context.Background(), Options{File: file, Config: cfg}) }); n > 64<<20 {
		t.Errorf("recovery allocated %d MiB for a %d MiB record; it must not read it", n>>20, huge>>20)
	}
	var ie *walkie.InputError
	if !errors.As(err, &ie) || ie.File != file {
		t.Fatalf("err = %v, want a walkie.InputError naming %s", err, file)
	}
	for _, want := range []string{strconv.Itoa(MaxRecoverGrowth), "turn 2 by b", "truncate -s " + strconv.FormatInt(size, 10), "walkie verify"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() != huge {
		t.Errorf("the record was changed: %v, %v", fi, err)
	}
	if loadState(t, file).Running == nil {
		t.Error("the running attempt was cleared though nothing was recovered")
	}
	if recs := turnLog(t, file); len(recs) != 0 {
		t.Errorf("logged %v though nothing was recovered", outcomesOf(recs))
	}
	// Recover (serve, watch --once) refuses the same way.
	if _, err := Recover(Options{File: file, Config: cfg}); !errors.As(err, &ie) {
		t.Errorf("Recover: %v, want the same refusal", err)
	}

	// The fix the error gives.
	if err := os.Truncate(file, size); err != nil {
		t.Fatal(err)
	}
	runAgain(t, file, cfg)
	if got := outcomesOf(turnLog(t, file)); !slices.Equal(got, []walkie.Outcome{walkie.OutcomeInterrupted, walkie.OutcomeAccepted}) {
		t.Fatalf("outcomes after the fix %v", got)
	}
}

// The snapshot lives in the state directory, which an agent can write: a
// gibibyte there is not read, and the record's own intact prefix stands
// in for it.
func TestRecoverReadsNoMoreOfTheSnapshotThanItHolds(t *testing.T) {
	file, cfg, _, _ := crashedDebate(t)
	st := loadState(t, file)
	if err := os.Truncate(st.Running.Snapshot, huge); err != nil {
		t.Fatal(err)
	}
	appendText(t, file, "\n## Turn 2 · b\nhalf")
	if n := allocated(func() { runAgain(t, file, cfg) }); n > 64<<20 {
		t.Errorf("recovery allocated %d MiB with a %d MiB snapshot; it must read no more than the record held", n>>20, huge>>20)
	}
	if got := outcomesOf(turnLog(t, file)); !slices.Equal(got, []walkie.Outcome{walkie.OutcomeInterrupted, walkie.OutcomeAccepted}) {
		t.Fatalf("outcomes %v", got)
	}
}
