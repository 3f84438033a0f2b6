package walkie

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 12.9: walkie acts on the record itself. A path that is a link is
// resolved once, by Resolve (the CLI does it before anything runs); every
// other operation refuses a link rather than replace it with a file.
func TestResolveRecord(t *testing.T) {
	file := newDebate(t, 3, "claude", "codex")
	dir := t.TempDir()
	link := filepath.Join(dir, "link.walkie.md")
	must(t, os.Symlink(file, link))
	chain := filepath.Join(dir, "chain.walkie.md")
	must(t, os.Symlink(link, chain))
	for _, p := range []string{file, link, chain} {
		got, err := Resolve(p)
		must(t, err)
		if real, _ := filepath.EvalSymlinks(file); got != real && got != file {
			t.Errorf("Resolve(%s) = %s, want %s", p, got, file)
		}
	}
	// A directory: bad input naming the walkie file inside it.
	_, err := Resolve(filepath.Dir(file))
	ie := asInput(t, err, filepath.Dir(file), 0)
	if !strings.Contains(ie.Msg, "is a directory") || !strings.Contains(ie.Fix, file) {
		t.Errorf("directory: %v", err)
	}
	empty := t.TempDir()
	if _, err := Resolve(empty); !strings.Contains(err.Error(), "walkie init "+filepath.Join(empty, "NAME.walkie.md")) {
		t.Errorf("empty directory: %v", err)
	}
	// A link to nothing, and a named pipe.
	dangling := filepath.Join(dir, "gone.walkie.md")
	must(t, os.Symlink(filepath.Join(dir, "nothing"), dangling))
	if _, err := Resolve(dangling); !os.IsNotExist(err) {
		t.Errorf("dangling link: %v, want not-exist", err)
	}
	fifo := filepath.Join(dir, "fifo.walkie.md")
	must(t, syscall.Mkfifo(fifo, 0o644))
	if _, err := Resolve(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("fifo: %v", err)
	}
}

func TestLinkedRecordRefused(t *testing.T) {
	file := newDebate(t, 3, "claude", "codex")
	link := filepath.Join(filepath.Dir(file), "link.walkie.md")
	must(t, os.Symlink(filepath.Base(file), link))
	before := snapshotTree(t, filepath.Dir(file))
	for name, op := range map[string]func() error{
		"load":     func() error { _, err := Load(link); return err },
		"meta":     func() error { _, err := ReadMeta(link); return err },
		"post":     func() error { _, err := Append(link, turn("claude", "Hi.\n")); return err },
		"approve":  func() error { _, err := Approve(link); return err },
		"briefing": func() error { _, err := SetBriefing(link, []byte("New text.\n")); return err },
		"halt":     func() error { return Halt(link, "x") },
		"repair":   func() error { _, err := Repair(link); return err },
	} {
		err := op()
		ie := asInput(t, err, link, 0)
		if !strings.Contains(ie.Msg, "is a symbolic link") || !strings.Contains(ie.Fix, file) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if diff := before.diff(snapshotTree(t, filepath.Dir(file))); diff != "" {
		t.Errorf("a refused operation changed the disk: %s", diff)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
}

// An agent that swaps the record for a link (or a pipe, or a directory)
// has tampered with it: the record is put back as a regular file, what the
// agent left is moved under rejected/ as it is, the link's target is left
// alone, and nothing blocks on a pipe.
func TestSettleRecordSwapped(t *testing.T) {
	for _, kind := range []string{"symlink", "fifo", "directory"} {
		t.Run(kind, func(t *testing.T) {
			file, before := oneTurn(t)
			target := filepath.Join(t.TempDir(), "elsewhere.md")
			targetText := append(append([]byte(nil), before...), "\n## Turn 2 · codex\n\nYes.\n"...)
			must(t, os.WriteFile(target, targetText, 0o644))
			must(t, os.Remove(file))
			switch kind {
			case "symlink":
				must(t, os.Symlink(target, file))
			case "fifo":
				must(t, syscall.Mkfifo(file, 0o644))
			case "directory":
				must(t, os.Mkdir(file, 0o755))
			}
			keep := KeepPath(StateDir(file, "d"), 2, "codex", 1)
			done := make(chan Settled, 1)
			go func() {
				s, err := Settle(file, before, want2, keep)
				must(t, err)
				done <- s
			}()
			var s Settled
			select {
			case s = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Settle blocked on the swapped record")
			}
			if s.Outcome != VerdictTampered || !strings.Contains(s.Detail, "the record was replaced by a") || s.Kept != keep {
				t.Fatalf("settled %+v, want tampered naming the swap", s)
			}
			// What the agent left is kept as it was, not read through.
			if fi, err := os.Lstat(keep); err != nil || fi.Mode().IsRegular() {
				t.Errorf("kept %v, %v; want the %s itself", fi, err, kind)
			}
			fi, err := os.Lstat(file)
			must(t, err)
			if !fi.Mode().IsRegular() || !bytes.Equal(readFile(t, file), before) {
				t.Fatalf("the record was not put back as a regular file (%v)", fi.Mode())
			}
			if !bytes.Equal(readFile(t, target), targetText) {
				t.Error("the link's target was changed")
			}
			mustVerify(t, file)
		})
	}
}

// The copy kept under rejected/ and the restored record keep the record's
// mode: a private record stays private.
func TestSettleKeepsMode(t *testing.T) {
	file, before := oneTurn(t)
	must(t, os.Chmod(file, 0o600))
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("\n## Turn 2 · claude\n\nWrong author.\n")
	must(t, err)
	must(t, f.Close())
	keep := KeepPath(StateDir(file, "d"), 2, "codex", 1)
	s, err := Settle(file, before, want2, keep)
	must(t, err)
	if s.Outcome != VerdictMalformed || s.Kept != keep {
		t.Fatalf("settled %+v", s)
	}
	for _, p := range []string{file, keep} {
		fi, err := os.Stat(p)
		must(t, err)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
}

// Issue 12.10: a turn of 1 GiB is judged, undone and kept without being
// read whole: what Settle allocates stays near one turn's worth, and the
// copy under rejected/ holds only the part the judge read, saying so.
func TestSettleBoundsWhatItReads(t *testing.T) {
	file, before := oneTurn(t)
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("\n## Turn 2 · codex\n\n")
	must(t, err)
	must(t, f.Truncate(1<<30)) // sparse: costs no disk
	must(t, f.Close())
	bound := JudgeLimit(&Meta{}, before)
	// Far below the file's size, with room for the race detector's own
	// accounting and the parses of the small record before the turn.
	const ceiling = 16 << 20

	allocated := func(run func()) uint64 {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		run()
		runtime.ReadMemStats(&m1)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	if n := allocated(func() {
		if TurnIsIn(file, before, want2) {
			t.Error("a 1 GiB turn counted as in")
		}
	}); n > ceiling {
		t.Errorf("TurnIsIn allocated %d bytes for a 1 GiB file (judge bound %d)", n, bound)
	}
	keep := KeepPath(StateDir(file, "d"), 2, "codex", 1)
	var s Settled
	if n := allocated(func() {
		s, err = Settle(file, before, want2, keep)
		must(t, err)
	}); n > ceiling {
		t.Errorf("Settle allocated %d bytes for a 1 GiB file (judge bound %d)", n, bound)
	}
	if s.Outcome != VerdictMalformed || !strings.Contains(s.Detail, "the turn added 1073741") || !strings.Contains(s.Detail, "did not read it all") {
		t.Errorf("settled %+v", s.Verdict)
	}
	fi, err := os.Stat(keep)
	must(t, err)
	if fi.Size() > bound+200 || !bytes.Contains(readFile(t, keep), []byte("[walkie: the agent's version was 1073741824 bytes or more; only its first")) {
		t.Errorf("kept %d bytes (bound %d)", fi.Size(), bound)
	}
	if !bytes.Equal(readFile(t, file), before) {
		t.Error("the record was not restored")
	}
	mustVerify(t, file)
}
