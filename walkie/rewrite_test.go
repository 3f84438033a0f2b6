package walkie

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// version is the content of rewrite number i: its number at both ends and
// a body whose letter and length depend on i, so that any mix of two
// versions, or a cut one, fails checkVersion.
func version(i int) []byte {
	body := bytes.Repeat([]byte{byte('a' + i%26)}, 1+(i*37)%5000)
	return fmt.Appendf(nil, "%08d %s %08d\n", i, body, i)
}

// checkVersion returns the number of the version b is, or an error if b
// is not exactly one.
func checkVersion(b []byte) (int, error) {
	if len(b) < 9 {
		return 0, fmt.Errorf("%d bytes: cut", len(b))
	}
	i, err := strconv.Atoi(string(b[:8]))
	if err != nil || !bytes.Equal(b, version(i)) {
		return 0, fmt.Errorf("not a whole version (%d bytes, starts %q)", len(b), b[:min(len(b), 20)])
	}
	return i, nil
}

// The rule a reader relies on: whoever has the file open keeps the
// version it opened, whole, however many rewrites follow, and the path
// always gives the newest. A spare written in place without the lease
// would write into the file this reader holds on the second rewrite.
func TestRewriteLeavesAnOpenFileAlone(t *testing.T) {
	for _, rw := range []struct {
		name  string
		write func(string, []byte, os.FileMode) error
	}{{"synced", RewriteFile}, {"unsynced", RewriteUnsynced}} {
		t.Run(rw.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			for i := range 3 {
				must(t, rw.write(path, version(i), 0o644))
			}
			held, err := os.Open(path)
			must(t, err)
			defer held.Close()
			for i := 3; i < 8; i++ {
				must(t, rw.write(path, version(i), 0o644))
				got, err := os.ReadFile(path)
				must(t, err)
				if n, err := checkVersion(got); err != nil || n != i {
					t.Fatalf("after rewrite %d the path reads version %d (%v)", i, n, err)
				}
			}
			var got bytes.Buffer
			if _, err := got.ReadFrom(held); err != nil {
				t.Fatal(err)
			}
			if n, err := checkVersion(got.Bytes()); err != nil || n != 2 {
				t.Fatalf("the file held open since version 2 now reads version %d (%v)", n, err)
			}
		})
	}
}

// Readers at full speed, and readers that open the file and read only
// after two more rewrites, all see whole versions, never older than the
// one in place when they opened it.
func TestRewriteReadersSeeWholeVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signal.json")
	must(t, RewriteUnsynced(path, version(0), 0o644))
	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	fail := make(chan error, 8)
	reader := func(slow bool) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			floor := written.Load()
			f, err := os.Open(path)
			if err != nil {
				fail <- err
				return
			}
			if slow {
				for written.Load() < floor+2 {
					select {
					case <-stop:
						f.Close()
						return
					default:
						runtime.Gosched()
					}
				}
			}
			var b bytes.Buffer
			_, err = b.ReadFrom(f)
			f.Close()
			n, verr := checkVersion(b.Bytes())
			switch {
			case err != nil:
				fail <- err
				return
			case verr != nil:
				fail <- fmt.Errorf("slow=%v: %w", slow, verr)
				return
			case int64(n) < floor:
				fail <- fmt.Errorf("slow=%v: opened after version %d was in place, read version %d", slow, floor, n)
				return
			}
		}
	}
	for _, slow := range []bool{false, false, true, true} {
		wg.Add(1)
		go reader(slow)
	}
	for i := 1; i <= 3000; i++ {
		if err := RewriteUnsynced(path, version(i), 0o644); err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		written.Store(int64(i))
	}
	close(stop)
	wg.Wait()
	close(fail)
	for err := range fail {
		t.Error(err)
	}
}

// A spare an agent planted (a link to a file of its choosing, or another
// name of one) is never written through: the file it leads to is left
// as it was, and the rewrite still lands.
func TestRewriteWritesThroughNoPlantedSpare(t *testing.T) {
	for _, plant := range []struct {
		name string
		do   func(victim, spare string) error
	}{{"symlink", os.Symlink}, {"hard link", os.Link}} {
		t.Run(plant.name, func(t *testing.T) {
			dir := t.TempDir()
			path, victim := filepath.Join(dir, "snapshot.md"), filepath.Join(dir, "victim")
			must(t, os.WriteFile(victim, []byte("the user's own file\n"), 0o644))
			must(t, RewriteUnsynced(path, version(1), 0o600))
			_ = os.Remove(spareOf(path))
			must(t, plant.do(victim, spareOf(path)))
			for i := 2; i < 5; i++ {
				must(t, RewriteUnsynced(path, version(i), 0o600))
				got, err := os.ReadFile(path)
				must(t, err)
				if n, err := checkVersion(got); err != nil || n != i {
					t.Fatalf("rewrite %d: the path reads version %d (%v)", i, n, err)
				}
			}
			if got, _ := os.ReadFile(victim); string(got) != "the user's own file\n" {
				t.Errorf("the planted spare's target was written: %q", got)
			}
			if fi, err := os.Lstat(path); err != nil || fi.Mode() != 0o600 {
				t.Errorf("the rewritten file: %v, %v; want a plain file of mode 0600", fi.Mode(), err)
			}
		})
	}
}

// A writer killed with SIGKILL at any moment leaves the file in place
// whole, and the next writer carries on from whatever spare it left.
func TestRewriteSurvivesKill9(t *testing.T) {
	if path := os.Getenv("WALKIE_REWRITE_LOOP"); path != "" {
		from, _ := strconv.Atoi(os.Getenv("WALKIE_REWRITE_FROM"))
		for i := from; ; i++ {
			if err := RewriteFile(path, version(i), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "state.json")
	must(t, RewriteFile(path, version(0), 0o644))
	for round := range 20 {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestRewriteSurvivesKill9$")
		before := readVersion(t, path)
		cmd.Env = append(os.Environ(), "WALKIE_REWRITE_LOOP="+path, "WALKIE_REWRITE_FROM="+strconv.Itoa(before+1))
		must(t, cmd.Start())
		// Let it rewrite a varying number of times, then kill it
		// wherever it is.
		deadline := time.Now().Add(time.Minute)
		for readVersion(t, path) < before+1+round%7 && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if got := readVersion(t, path); got < before {
			t.Fatalf("round %d: version %d after %d", round, got, before)
		}
	}
}

// readVersion reads path and fails the test unless it is a whole version.
func readVersion(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	n, err := checkVersion(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}
