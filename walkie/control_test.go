package walkie

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInit(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "api-shape.walkie.md")
	must(t, Init(file, InitOptions{Participants: []string{"claude", "codex", "gemini"}, MaxRounds: 4, Briefing: []byte("\n\nThe question.\n\n")}))
	d := mustVerify(t, file)
	if d.Meta.ID != "api-shape" || d.Meta.MaxRounds != 4 || strings.Join(d.Meta.Participants, ",") != "claude,codex,gemini" {
		t.Errorf("meta %+v", d.Meta)
	}
	if string(d.Briefing) != "The question.\n" || len(d.Entries) != 0 || len(d.Tail) != 0 {
		t.Errorf("briefing %q, %d entries, tail %q", d.Briefing, len(d.Entries), d.Tail)
	}
	sdir := StateDir(file, "api-shape")
	sig, err := LoadSignal(sdir)
	must(t, err)
	if sig == nil || sig.Turn != "claude" || sig.NextTurn != 1 || sig.Round != 1 || sig.Status != StatusOpen {
		t.Errorf("doorbell after init: %+v", sig)
	}
	if _, err := os.Stat(filepath.Join(sdir, "lock")); err != nil {
		t.Errorf("init did not create the lock file: %v", err)
	}
	// The supervisor's copy is on for a new debate (issue 13).
	if st, err := LoadState(sdir); err != nil || st.CopySupervisor == nil || !*st.CopySupervisor {
		t.Errorf("copy after init: %+v, %v", st, err)
	}
	off := filepath.Join(dir, "quiet.walkie.md")
	must(t, Init(off, InitOptions{Participants: []string{"a", "b"}, NoCopy: true}))
	if st, _ := LoadState(StateDir(off, "quiet")); st.CopySupervisor == nil || *st.CopySupervisor {
		t.Errorf("copy after init with NoCopy: %+v", st.CopySupervisor)
	}

	// Never overwrites.
	before := snapshotTree(t, dir)
	err = Init(file, InitOptions{Participants: []string{"a", "b"}})
	asInput(t, err, file, 0)
	if !strings.Contains(err.Error(), "already exists") {
		t.Errorf("%v", err)
	}
	if diff := before.diff(snapshotTree(t, dir)); diff != "" {
		t.Errorf("changed the disk: %s", diff)
	}

	// Defaults: id from the file name, six rounds, a placeholder briefing.
	f2 := filepath.Join(dir, "second.walkie.md")
	must(t, Init(f2, InitOptions{Participants: []string{"a", "b"}}))
	d2 := mustVerify(t, f2)
	if d2.Meta.ID != "second" || d2.Meta.MaxRounds != 6 || len(d2.Briefing) == 0 {
		t.Errorf("defaults: %+v briefing %q", d2.Meta, d2.Briefing)
	}
}

func TestInitRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		o    InitOptions
		want string
	}{
		{"one participant", "a.walkie.md", InitOptions{Participants: []string{"claude"}}, "at least two participants"},
		{"no participants", "a.walkie.md", InitOptions{}, "at least two participants"},
		{"duplicate", "a.walkie.md", InitOptions{Participants: []string{"claude", "claude"}}, "listed twice"},
		{"bad name", "a.walkie.md", InitOptions{Participants: []string{"claude", "co dex"}}, "not a valid name"},
		{"supervisor", "a.walkie.md", InitOptions{Participants: []string{"claude", "supervisor"}}, "not a valid name"},
		{"bad id", "a.walkie.md", InitOptions{ID: "no spaces please", Participants: []string{"a", "b"}}, "not a simple name"},
		{"bad id from file name", "my debate.walkie.md", InitOptions{Participants: []string{"a", "b"}}, "--id"},
		{"negative rounds", "a.walkie.md", InitOptions{Participants: []string{"a", "b"}, MaxRounds: -1}, "max_rounds"},
		{"briefing with a turn heading", "a.walkie.md", InitOptions{Participants: []string{"a", "b"}, Briefing: []byte("Q.\n\n## Turn 1 · a\n")}, "line 3"},
		{"briefing with a marker", "a.walkie.md", InitOptions{Participants: []string{"a", "b"}, Briefing: []byte("Q.\n<!-- walkie seq=1 agent=a at=2026-01-01T00:00:00Z prev=x hash=y -->\n")}, "marker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, tc.file)
			err := Init(file, tc.o)
			asInput(t, err, file, 0)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v does not say %q", err, tc.want)
			}
			if diff := (tree{"./": ""}).diff(snapshotTree(t, dir)); diff != "" {
				t.Errorf("changed the disk: %s", diff)
			}
		})
	}
}

// TestInitStaleState: a new debate must not inherit another's state (a
// halt, or a last_seq that would call the new file truncated).
func TestInitStaleState(t *testing.T) {
	file := newDebate(t, 6, "claude", "codex")
	mustAppend(t, file, turn("claude", "One.\n"))
	must(t, os.Remove(file))
	err := Init(file, InitOptions{Participants: []string{"claude", "codex"}})
	ie := asInput(t, err, file, 0)
	if !strings.Contains(ie.Error(), ".walkie") {
		t.Errorf("%v does not name the state directory", ie)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Error("the file was created anyway")
	}
	must(t, os.RemoveAll(filepath.Join(filepath.Dir(file), ".walkie")))
	must(t, Init(file, InitOptions{Participants: []string{"claude", "codex"}}))
	mustAppend(t, file, turn("claude", "One again.\n"))
	mustVerify(t, file)
}

func TestHaltResume(t *testing.T) {
	file := newDebate(t, 6, "claude", "codex")
	dir := StateDir(file, "d")
	mustAppend(t, file, turn("claude", "One.\n"))
	record := readFile(t, file)
	must(t, Halt(file, "naming loop"))
	st, err := LoadState(dir)
	must(t, err)
	if st.Status != StatusHalted || st.Reason != "naming loop" || st.HaltedAt == nil {
		t.Errorf("state after halt: %+v", st)
	}
	sig, err := LoadSignal(dir)
	must(t, err)
	if sig.Status != StatusHalted || sig.Turn != "" || sig.Seq != 1 {
		t.Errorf("doorbell after halt: %+v", sig)
	}
	if !bytes.Equal(record, readFile(t, file)) {
		t.Error("halt changed the record")
	}
	_, err = Append(file, turn("codex", "Two.\n"))
	asRefused(t, err, "halted (naming loop)")

	must(t, Resume(file))
	st, err = LoadState(dir)
	must(t, err)
	if st.Status != "" || st.Reason != "" || st.HaltedAt != nil {
		t.Errorf("state after resume: %+v", st)
	}
	if sig, _ := LoadSignal(dir); sig.Status != StatusOpen || sig.Turn != "codex" {
		t.Errorf("doorbell after resume: %+v", sig)
	}
	asRefused(t, Resume(file), "not halted")
	mustAppend(t, file, turn("codex", "Two.\n"))

	// Resume also reopens a failed debate and forgets its retries.
	_, _, err = UpdateState(file, OpState, func(m *Meta, p Progress, s *State) error {
		s.Status, s.Reason, s.Attempts = StatusFailed, "retries spent", map[string]int{"3": 3}
		return nil
	})
	must(t, err)
	_, err = Append(file, turn("claude", "Three.\n"))
	asRefused(t, err, "ended as failed (retries spent)", "walkie resume")
	must(t, Resume(file))
	if st, _ := LoadState(dir); st.Attempts != nil || st.Status != "" {
		t.Errorf("after resume: %+v", st)
	}

	// A converged debate cannot be halted.
	mustAppend(t, file, signed("claude", "Three.\n"), signed("codex", "Four.\n"))
	before := snapshotTree(t, filepath.Dir(file))
	asRefused(t, Halt(file, "late"), "already converged")
	if diff := before.diff(snapshotTree(t, filepath.Dir(file))); diff != "" {
		t.Errorf("a refused halt changed the disk: %s", diff)
	}
}

func TestExtend(t *testing.T) {
	file := newDebate(t, 1, "claude", "codex")
	dir := StateDir(file, "d")
	mustAppend(t, file, turn("claude", "One.\n"), turn("codex", "Two.\n"))
	_, err := Append(file, turn("claude", "Three.\n"))
	asRefused(t, err, "past the round cap of 1")
	if sig, _ := LoadSignal(dir); sig.Status != StatusMaxRounds || sig.Turn != "" {
		t.Errorf("doorbell at the cap: %+v", sig)
	}

	_, err = Extend(file, 0)
	if err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Errorf("extend by 0: %v", err)
	}
	n, err := Extend(file, 2)
	must(t, err)
	if n != 3 {
		t.Errorf("cap after extend: %d, want 3", n)
	}
	if sig, _ := LoadSignal(dir); sig.Status != StatusOpen || sig.Turn != "claude" {
		t.Errorf("doorbell after extend: %+v", sig)
	}
	if d := mustLoad(t, file); d.Meta.MaxRounds != 1 {
		t.Error("extend changed the record's front matter")
	}
	mustAppend(t, file, turn("claude", "Three.\n"), turn("codex", "Four.\n"))
	n, err = Extend(file, 1)
	must(t, err)
	if n != 4 {
		t.Errorf("second extend: cap %d, want 4", n)
	}
	// The extension lasts until the debate ends.
	mustAppend(t, file, signed("claude", "Five.\n"), signed("codex", "Six.\n"))
	st, err := LoadState(dir)
	must(t, err)
	if st.ExtraRounds != 0 {
		t.Errorf("extra rounds after convergence: %d", st.ExtraRounds)
	}
	_, err = Extend(file, 1)
	asRefused(t, err, "already converged")
}

// An extension ends with the debate, however it ends (issue 13): at its
// extended cap, by a status the controller sets. A halt is a pause it
// outlives; one given while the debate stands stopped lasts until it ends
// again, and one given after the cap counts from where the debate stands.
func TestExtensionEndsWithTheDebate(t *testing.T) {
	file := newDebate(t, 1, "claude", "codex")
	dir := StateDir(file, "d")
	extra := func() int {
		st, err := LoadState(dir)
		must(t, err)
		return st.ExtraRounds
	}
	extend := func(rounds int) int {
		t.Helper()
		n, err := Extend(file, rounds)
		must(t, err)
		return n
	}
	mustAppend(t, file, turn("claude", "One.\n"), turn("codex", "Two.\n"))
	extend(1)
	mustAppend(t, file, turn("claude", "Three.\n"), turn("codex", "Four.\n"))
	// At the extended cap of 2: ended, so the extension is gone, and the
	// status stays max-rounds (round 3 is past the cap of 1 too); the cap
	// a person reads is the one it held.
	if n := extra(); n != 0 {
		t.Errorf("extra rounds after the debate ended at its extended cap: %d", n)
	}
	if d := mustLoad(t, file); CapHeld(&d.Meta, d.Progress(), &State{}) != 2 {
		t.Errorf("cap held %d, want 2", CapHeld(&d.Meta, d.Progress(), &State{}))
	}
	if sig, _ := LoadSignal(dir); sig.Status != StatusMaxRounds {
		t.Errorf("doorbell: %+v", sig)
	}
	// Extending again counts from where it stands: round 3 is next.
	if n := extend(1); n != 3 {
		t.Errorf("cap after extending an ended debate by 1: %d, want 3", n)
	}
	// A halt is a pause: the extension outlives it, and one given while
	// halted adds to it.
	must(t, Halt(file, "a pause"))
	if n := extra(); n != 2 {
		t.Errorf("extra rounds after a halt: %d, want 2", n)
	}
	if n := extend(1); n != 4 {
		t.Errorf("cap after extending a halted debate: %d, want 4", n)
	}
	mustAppend(t, file, supervisorNote("Still thinking.\n"))
	if n := extra(); n != 3 {
		t.Errorf("extra rounds given while halted: %d, want 3", n)
	}
	must(t, Resume(file))
	mustAppend(t, file, turn("claude", "Five.\n"))
	// A status set by the controller (failed, over-budget) ends it.
	_, _, err := UpdateState(file, OpState, func(_ *Meta, _ Progress, s *State) error {
		s.Status, s.Reason = StatusOverBudget, "spent"
		return nil
	})
	must(t, err)
	if n := extra(); n != 0 {
		t.Errorf("extra rounds after over-budget: %d", n)
	}
}

func TestRepair(t *testing.T) {
	file := newDebate(t, 6, "claude", "codex")
	dir := StateDir(file, "d")
	mustAppend(t, file, turn("claude", "One.\n"))
	good := readFile(t, file)

	// Nothing to do on a whole record, nor on blank trailing lines.
	for _, tail := range []string{"", "\n\n"} {
		must(t, os.WriteFile(file, append(append([]byte(nil), good...), tail...), 0o644))
		side, err := Repair(file)
		if err != nil || side != "" {
			t.Errorf("repair of a whole record (tail %q): %q, %v", tail, side, err)
		}
	}

	torn := "\n## Turn 2 · codex\n\nI was cut sh"
	must(t, os.WriteFile(file, append(append([]byte(nil), good...), torn...), 0o644))

	// Refused while a controller runs the debate: its agent may be writing.
	run, err := TryRunLock(dir)
	must(t, err)
	before := snapshotTree(t, filepath.Dir(file))
	_, err = Repair(file)
	asRefused(t, err, "controller is running")
	if diff := before.diff(snapshotTree(t, filepath.Dir(file))); diff != "" {
		t.Errorf("a refused repair changed the disk: %s", diff)
	}
	run.Unlock()

	side, err := Repair(file)
	must(t, err)
	if !strings.HasPrefix(side, dir+string(filepath.Separator)+"torn-") {
		t.Errorf("side file %s is not under %s", side, dir)
	}
	if got := readFile(t, side); string(got) != torn {
		t.Errorf("side file holds %q, want the torn bytes %q", got, torn)
	}
	if !bytes.Equal(readFile(t, file), good) {
		t.Error("repair did not cut the file back to its last entry")
	}
	mustVerify(t, file)

	// A second tear gets its own side file; the first is kept.
	must(t, os.WriteFile(file, append(append([]byte(nil), good...), "partial"...), 0o644))
	side2, err := Repair(file)
	must(t, err)
	if side2 == side {
		t.Fatalf("second repair reused %s", side)
	}
	if got := readFile(t, side); string(got) != torn {
		t.Error("the first side file was overwritten")
	}
	mustAppend(t, file, turn("codex", "Two.\n"))
	mustVerify(t, file)
}

func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	st, err := LoadState(dir)
	must(t, err)
	if st.LastSeq != 0 || st.Status != "" {
		t.Errorf("no log: %+v", st)
	}
	st.Status, st.ExtraRounds, st.LastSeq, st.CostUSD = StatusHalted, 2, 9, 1.25
	must(t, SaveState(dir, st))
	got, err := LoadState(dir)
	must(t, err)
	if got.Status != StatusHalted || got.ExtraRounds != 2 || got.LastSeq != 9 || got.CostUSD != 1.25 || got.UpdatedAt.IsZero() {
		t.Errorf("round trip: %+v", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != LogFile {
		t.Errorf("a save left %v", ents)
	}
	// The log's first line damaged, a whole line after it: refused, named.
	must(t, SaveState(dir, &State{LastSeq: 10}))
	b2 := readFile(t, filepath.Join(dir, LogFile))
	b2[3] ^= 1
	must(t, os.WriteFile(filepath.Join(dir, LogFile), b2, 0o644))
	_, err = LoadState(dir)
	asInput(t, err, filepath.Join(dir, LogFile), 1)
}

func TestAddCost(t *testing.T) {
	var s State
	s.AddCost(0.5, true)
	s.AddCost(0.25, true)
	s.AddCost(0.1, false) // a partial figure: spent, and the rest unknown
	s.AddCost(0, false)
	if s.CostUSD != 0.85 || s.UnknownCosts != 2 || s.MaxCostUSD != 0.5 {
		t.Errorf("%+v", s)
	}
	// What is no cost at all lowers nothing and poisons nothing: each
	// counts as one attempt of unknown cost (issue 27, item 6).
	for _, bad := range []float64{-6, math.NaN(), math.Inf(1), math.Inf(-1)} {
		s.AddCost(bad, true)
	}
	if s.CostUSD != 0.85 || s.UnknownCosts != 6 || s.MaxCostUSD != 0.5 {
		t.Errorf("after bad figures: %+v", s)
	}
}
