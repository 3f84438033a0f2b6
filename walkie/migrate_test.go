package walkie

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// unpackLayout writes the fixture testdata/layout/NAME.txtar (a debate
// directory as the walkie before the log left it; make.sh made it) into
// a fresh directory and returns the record's path.
func unpackLayout(t testing.TB, name string) string {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join("testdata", "layout", name+".txtar"))
	must(t, err)
	dir := t.TempDir()
	for _, f := range a.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, f.Data, 0o644))
	}
	return filepath.Join(dir, "d.walkie.md")
}

// legacyOf reads a fixture's state.json and turns.jsonl as they are.
func legacyOf(t testing.TB, dir string) (*State, []json.RawMessage) {
	t.Helper()
	st, err := loadLegacyState(dir)
	must(t, err)
	recs, err := readLegacyTurns(dir)
	must(t, err)
	return st, recs
}

// A debate of layout 1 is read as it is, changing nothing; its first
// change converts it, once: the log holds its state and every attempt,
// the old files are moved aside only after, and the debate verifies and
// goes on.
func TestMigrateLayout1(t *testing.T) {
	for _, name := range []string{"ended", "interrupted"} {
		t.Run(name, func(t *testing.T) {
			file := unpackLayout(t, name)
			dir := StateDir(file, "d")
			wantState, wantRecs := legacyOf(t, dir)
			if len(wantRecs) == 0 {
				t.Fatal("the fixture has no attempts")
			}
			before := snapshotTree(t, filepath.Dir(file))
			st, err := LoadState(dir)
			must(t, err)
			if !sameState(st, wantState) {
				t.Errorf("read as it is: %+v, want %+v", st, wantState)
			}
			recs, err := LogAttempts(dir)
			must(t, err)
			if len(recs) != len(wantRecs) {
				t.Errorf("%d attempts read, want %d", len(recs), len(wantRecs))
			}
			if d := before.diff(snapshotTree(t, filepath.Dir(file))); d != "" {
				t.Fatalf("a read changed the disk: %s", d)
			}

			// The first change: a watcher's mark.
			_, _, err = UpdateState(file, OpHandled, func(_ *Meta, _ Progress, s *State) error { s.HandledSeq = 42; return nil })
			must(t, err)
			if _, err := os.Stat(filepath.Join(dir, LogFile)); err != nil {
				t.Fatal("no log after the first change")
			}
			for _, old := range []string{legacyState, legacyTurns} {
				if _, err := os.Stat(filepath.Join(dir, old)); err == nil {
					t.Errorf("%s is still in place", old)
				}
				if _, err := os.Stat(filepath.Join(dir, legacyDir, old)); err != nil {
					t.Errorf("%s was not kept: %v", old, err)
				}
			}
			st, err = LoadState(dir)
			must(t, err)
			wantState.HandledSeq = 42
			if !sameState(st, wantState) {
				t.Errorf("converted: %+v, want %+v", st, wantState)
			}
			recs, err = LogAttempts(dir)
			must(t, err)
			for i := range wantRecs {
				var a, b any
				must(t, json.Unmarshal(recs[i], &a))
				must(t, json.Unmarshal(wantRecs[i], &b))
				if !bytes.Equal(mustJSON(t, a), mustJSON(t, b)) {
					t.Errorf("attempt %d: %s, want %s", i, recs[i], wantRecs[i])
				}
			}
			if name == "interrupted" {
				if st.Running == nil || st.Running.Turn != 2 || st.Running.Session == "" {
					t.Errorf("the interrupted attempt is not running after the conversion: %+v", st.Running)
				}
				return // the agent's unstamped text is the controller's to recover (controller's TestRecoverLayout1)
			}
			mustVerify(t, file)
			// Converted once: a post adds a line, and converts nothing
			// again.
			lines := bytes.Count(readFile(t, filepath.Join(dir, LogFile)), []byte("\n"))
			mustAppend(t, file, supervisorNote("After the upgrade.\n"))
			if n := bytes.Count(readFile(t, filepath.Join(dir, LogFile)), []byte("\n")); n != lines+1 {
				t.Errorf("%d lines after one more change, want %d", n, lines+1)
			}
			mustVerify(t, file)
		})
	}
}

// A conversion cut short: the log is durable but the old files are still
// in place (the process died between the two). The log wins; the old
// files are never read again.
func TestMigrateCutShort(t *testing.T) {
	file := unpackLayout(t, "ended")
	dir := StateDir(file, "d")
	wantState, _ := legacyOf(t, dir)
	st, recs := legacyOf(t, dir)
	b, err := legacyLog(st, recs)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, LogFile), b, 0o644))
	// The old state says something else now: it must not be read.
	must(t, os.WriteFile(filepath.Join(dir, legacyState), []byte(`{"status":"failed","reason":"stale"}`), 0o644))
	got, err := LoadState(dir)
	must(t, err)
	if !sameState(got, wantState) {
		t.Errorf("%+v, want the log's %+v", got, wantState)
	}
	mustVerify(t, file)
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}
