package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoSpec is a session that prints marker, with its transcripts named
// name.log and name.txt in dir.
func echoSpec(dir, name, marker string) Spec {
	return Spec{
		Argv:     []string{"/bin/sh", "-c", "echo " + marker},
		RawPath:  filepath.Join(dir, name+".log"),
		TextPath: filepath.Join(dir, name+".txt"),
		Grace:    time.Second,
	}
}

// checkTranscripts fails unless both of spec's transcripts hold marker
// and nothing of another session's.
func checkTranscripts(t *testing.T, spec Spec, marker string) {
	t.Helper()
	for _, p := range []string{spec.RawPath, spec.TextPath} {
		got := readFile(t, p)
		if !strings.Contains(got, marker) || strings.Count(got, "marker-") != 1 {
			t.Errorf("%s holds %q, want only %s", filepath.Base(p), got, marker)
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode() != 0o600 {
			t.Errorf("%s: %v, %v; want a plain file of mode 0600", filepath.Base(p), fi.Mode(), err)
		}
	}
}

// Each session leaves empty reserves that the next one takes for its own
// transcripts; what each transcript holds is still its own session's.
func TestTranscriptReserves(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 3 {
		marker := fmt.Sprintf("marker-%d", i)
		spec := echoSpec(dir, fmt.Sprintf("%04d-a-1", i), marker)
		r := run(t, context.Background(), spec)
		want(t, r, EndExited, EndedBySelf, 0, "")
		checkTranscripts(t, spec, marker)
	}
	for _, ext := range []string{".log", ".txt"} {
		fi, err := os.Lstat(filepath.Join(dir, ".next"+ext))
		if err != nil || fi.Size() != 0 || fi.Mode() != 0o600 {
			t.Errorf("reserve .next%s: %v, %v; want an empty file of mode 0600", ext, fi, err)
		}
	}
}

// A reserve an agent planted (a link to a file of its choosing, another
// name of one, a file with content) is never written through or taken,
// nor is a link planted at a transcript's own name followed.
func TestTranscriptReserveNeverTakesAPlantedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("the user's own file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plants := []func() error{
		func() error { return os.Symlink(victim, filepath.Join(dir, ".next.log")) },
		func() error { return os.Link(victim, filepath.Join(dir, ".next.txt")) },
	}
	for _, plant := range plants {
		if err := plant(); err != nil {
			t.Fatal(err)
		}
	}
	spec := echoSpec(dir, "0001-a-1", "marker-1")
	// And the transcript's own name, which an agent can predict.
	if err := os.Symlink(victim, spec.RawPath); err != nil {
		t.Fatal(err)
	}
	want(t, run(t, context.Background(), spec), EndExited, EndedBySelf, 0, "")
	checkTranscripts(t, spec, "marker-1")
	if got := readFile(t, victim); got != "the user's own file\n" {
		t.Errorf("the planted reserve's target now holds %q", got)
	}
	// A reserve with content is not empty: never taken.
	if err := os.WriteFile(filepath.Join(dir, ".next.log"), []byte("planted"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec = echoSpec(dir, "0002-a-1", "marker-2")
	want(t, run(t, context.Background(), spec), EndExited, EndedBySelf, 0, "")
	checkTranscripts(t, spec, "marker-2")
}

// Sessions side by side in one directory (a round table's reviewers) race
// for the same reserves; every transcript still holds only its own
// session's output.
func TestTranscriptReservesRace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for round := range 3 {
		var wg sync.WaitGroup
		for i := range 6 {
			marker := fmt.Sprintf("marker-%d-%d", round, i)
			spec := echoSpec(dir, fmt.Sprintf("%04d-r%d-1", round, i), marker)
			wg.Go(func() {
				r, err := Run(context.Background(), spec)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Ending != EndExited {
					t.Errorf("%s: %s", marker, r.Ending)
				}
				checkTranscripts(t, spec, marker)
			})
		}
		wg.Wait()
	}
}
