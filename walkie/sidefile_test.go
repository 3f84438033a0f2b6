package walkie

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Every way an agent can make a side file's name lead elsewhere is
// refused, with the file named and what is wrong; the plain file walkie
// wrote is read.
func TestReadSideFileRefusesWhatIsNotWalkiesFile(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, dir, outside string) // makes dir/turns/x.txt
		want  string                                  // in the error; "" reads the file
	}{
		{"a plain file", func(t *testing.T, dir, outside string) {
			must(t, os.WriteFile(filepath.Join(dir, "turns", "x.txt"), []byte("ours"), 0o644))
		}, ""},
		{"a link to a file outside", func(t *testing.T, dir, outside string) {
			must(t, os.Symlink(outside, filepath.Join(dir, "turns", "x.txt")))
		}, "is a symbolic link"},
		{"a link inside the directory", func(t *testing.T, dir, outside string) {
			must(t, os.WriteFile(filepath.Join(dir, "state.json"), []byte("{}"), 0o644))
			must(t, os.Symlink("../state.json", filepath.Join(dir, "turns", "x.txt")))
		}, "is a symbolic link"},
		{"a link at the directory on the way", func(t *testing.T, dir, outside string) {
			must(t, os.Remove(filepath.Join(dir, "turns")))
			must(t, os.MkdirAll(filepath.Join(filepath.Dir(outside), "t"), 0o755))
			must(t, os.WriteFile(filepath.Join(filepath.Dir(outside), "t", "x.txt"), []byte("secret"), 0o644))
			must(t, os.Symlink(filepath.Join(filepath.Dir(outside), "t"), filepath.Join(dir, "turns")))
		}, "turns: is a symbolic link"},
		{"a hard link to a file outside", func(t *testing.T, dir, outside string) {
			must(t, os.Link(outside, filepath.Join(dir, "turns", "x.txt")))
		}, "has 2 names (a hard link)"},
		{"a named pipe", func(t *testing.T, dir, outside string) {
			must(t, syscall.Mkfifo(filepath.Join(dir, "turns", "x.txt"), 0o644))
		}, "is a named pipe, not a regular file"},
		{"a directory", func(t *testing.T, dir, outside string) {
			must(t, os.Mkdir(filepath.Join(dir, "turns", "x.txt"), 0o755))
		}, "is a directory, not a regular file"},
		{"a file on the way", func(t *testing.T, dir, outside string) {
			must(t, os.Remove(filepath.Join(dir, "turns")))
			must(t, os.WriteFile(filepath.Join(dir, "turns"), []byte("x"), 0o644))
		}, "turns: is not a regular file"},
		{"over the bound", func(t *testing.T, dir, outside string) {
			must(t, os.WriteFile(filepath.Join(dir, "turns", "x.txt"), []byte(strings.Repeat("x", 101)), 0o644))
		}, "is over 100 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.Mkdir(filepath.Join(dir, "turns"), 0o755))
			outside := filepath.Join(t.TempDir(), "secret")
			must(t, os.WriteFile(outside, []byte("secret"), 0o600))
			c.plant(t, dir, outside)
			done := make(chan struct{})
			var b []byte
			var err error
			go func() { defer close(done); b, err = ReadSideFile(dir, "turns/x.txt", 100) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("ReadSideFile blocked")
			}
			if c.want == "" {
				if err != nil || string(b) != "ours" {
					t.Fatalf("a plain file: %q, %v", b, err)
				}
				return
			}
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(ie.File, dir) {
				t.Fatalf("got %q, %v; want an input error naming the file and saying %q", b, err, c.want)
			}
			if strings.Contains(string(b), "secret") {
				t.Fatalf("read the file outside: %q", b)
			}
		})
	}
}

// A missing file or directory is fs.ErrNotExist, which callers take for
// "none yet"; a name that climbs out of the directory is refused.
func TestReadSideFileNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"state.json", "turns/x.txt"} {
		if _, err := ReadSideFile(dir, name, 100); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s missing: %v, want fs.ErrNotExist", name, err)
		}
	}
	if _, err := ReadSideFile(filepath.Join(dir, "nope"), "state.json", 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v, want fs.ErrNotExist", err)
	}
	for _, name := range []string{"../x", "turns/../../x", "/etc/passwd", "turns//x", "./x", ""} {
		var ie *InputError
		if _, err := ReadSideFile(dir, name, 100); !errors.As(err, &ie) {
			t.Errorf("%q: %v, want it refused", name, err)
		}
	}
}

// A file rewritten in place holds a write lease while it is written, and
// an open with O_NONBLOCK fails instead of waiting for it: readers of a
// state file rewritten in a loop always get a whole version, never an
// error.
func TestReadSideFileWhileRewritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	must(t, RewriteFile(path, version(0), 0o644))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; !stop.Load(); i++ {
			if err := RewriteUnsynced(path, version(i), 0o644); err != nil {
				t.Error(err)
				return
			}
		}
	})
	defer wg.Wait()
	defer stop.Store(true)
	for range 2000 {
		b, err := ReadSideFile(dir, "state.json", MaxSideFile)
		if err != nil {
			t.Fatalf("read while rewritten: %v", err)
		}
		if _, err := checkVersion(b); err != nil {
			t.Fatal(err)
		}
	}
}
