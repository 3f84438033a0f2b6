package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// endless is a body that never ends, counting what was read of it.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += int64(len(p))
	return len(p), nil
}

// Issue 12.10: a body from standard input is read with its limit checked
// while reading; a 1 GB (or endless) body costs no more than the limit.
func TestReadBodyIsBounded(t *testing.T) {
	in := &endless{}
	body, size, err := readBody(in, "-", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) != 1001 || size != -1 {
		t.Errorf("got %d bytes, size %d; want the first 1001 and an unknown size", len(body), size)
	}
	// io.LimitReader asks for no more than it may return, bar one buffer.
	if in.read > 1001+32<<10 {
		t.Errorf("read %d bytes of an endless body with a limit of 1000", in.read)
	}
	// A body file says its size, and is read no further than stdin.
	f := filepath.Join(t.TempDir(), "big.md")
	if err := os.WriteFile(f, []byte(strings.Repeat("y", 5000)), 0o644); err != nil {
		t.Fatal(err)
	}
	body, size, err = readBody(nil, f, 1000)
	if err != nil || len(body) != 1001 || size != 5000 {
		t.Errorf("file: %d bytes, size %d, %v", len(body), size, err)
	}
	// Within the limit: whole, size 0.
	body, size, err = readBody(io.LimitReader(&endless{}, 10), "-", 1000)
	if err != nil || len(body) != 10 || size != 0 {
		t.Errorf("small: %d bytes, size %d, %v", len(body), size, err)
	}
}
