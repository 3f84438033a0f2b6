package walkie

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What an agent can leave where walkie expects a file it wrote: none of
// it is opened but a regular file, and nothing makes the reader wait
// (issue 27, item 7: a named pipe held `walkie review` for 739 s).
func TestOpenRegularRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	must(t, os.WriteFile(file, []byte("text\n"), 0o644))
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	zero := filepath.Join(dir, "zero")
	must(t, os.Symlink("/dev/zero", zero))
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(file, link))
	for _, c := range []struct {
		name, path string
		kind       string // in the refusal; "" opens
	}{
		{"a regular file", file, ""},
		{"a named pipe", fifo, "a named pipe"},
		{"a link to /dev/zero", zero, "a symbolic link"},
		{"a link to a regular file", link, "a symbolic link"},
		{"a device", "/dev/null", "a device"},
		{"a directory", dir, "a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := boundedRead(t, c.path)
			var nr *NotRegularError
			switch {
			case c.kind == "" && (err != nil || string(b) != "text\n"):
				t.Fatalf("%q, %v", b, err)
			case c.kind != "" && (!errors.As(err, &nr) || nr.Path != c.path || !strings.Contains(err.Error(), c.kind)):
				t.Fatalf("err %v, want it refused as %s", err, c.kind)
			}
		})
	}
	if _, err := boundedRead(t, filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// boundedRead reads path with ReadRegular, failing the test if it waits:
// on a named pipe, an os.Open would wait for a writer that never comes.
func boundedRead(t *testing.T, path string) ([]byte, error) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := ReadRegular(path)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-time.After(10 * time.Second):
		// Unblock the reader so the test binary can end.
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("reading %s still waits after 10s", path)
		return nil, nil
	}
}
