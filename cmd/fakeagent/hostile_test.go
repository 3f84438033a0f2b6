package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tries report each path refused or reached, with the error as a tool
// prints it, and the agent goes on to its behaviour either way.
func TestTries(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "d.walkie.md")
	if err := os.WriteFile(file, []byte("---\nparticipants: [ann, bob]\n---\n# Briefing\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readable, forge := filepath.Join(dir, "notes.md"), filepath.Join(dir, "state.json")
	if err := os.WriteFile(readable, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--file", file, "--agent", "ann",
		"--try-read", readable, "--try-read", filepath.Join(dir, "missing"), "--try-write", forge, "--try-write", filepath.Join(dir, "no", "such", "dir")},
		nil, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"fakeagent: read " + readable + ": ALLOWED (5 bytes)\n",
		"fakeagent: read " + filepath.Join(dir, "missing") + ": refused: open " + filepath.Join(dir, "missing") + ": no such file or directory\n",
		"fakeagent: write " + forge + ": ALLOWED (",
		"fakeagent: write " + filepath.Join(dir, "no", "such", "dir") + ": refused: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(forge); !strings.Contains(string(b), `"forged_by":"fakeagent"`) {
		t.Errorf("the forged line: %q", b)
	}
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "## Turn 1 · ann\n") {
		t.Errorf("the turn after the tries: %s", b)
	}
}
