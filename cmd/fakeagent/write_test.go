package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The write behaviour replaces the whole file, creating it if needed, and
// fills in the body's placeholders like a turn body.
func TestWriteBehaviour(t *testing.T) {
	out := filepath.Join(t.TempDir(), "briefing.md")
	for i, body := range []string{"## Question\nfirst, by {agent}\n", "second\n\n\n"} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"--file", out, "--agent", "ann", "--behavior", "write", "--body", body}, nil, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", i, code, stderr.String())
		}
	}
	b, err := os.ReadFile(out)
	if err != nil || string(b) != "second\n" {
		t.Fatalf("file %q, %v", b, err)
	}
	os.Remove(out)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--file", out, "--agent", "ann", "--behavior", "write", "--body", "by {agent}"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if b, _ := os.ReadFile(out); string(b) != "by ann\n" {
		t.Fatalf("file %q", b)
	}
	// Other behaviours still need the file to exist.
	if code := run(context.Background(), []string{"--file", out + ".missing", "--agent", "ann"}, nil, &stdout, &stderr); code == 0 {
		t.Fatal("append to a missing file succeeded")
	}
}
