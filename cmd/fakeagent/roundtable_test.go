package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const roundtableRecord = `---
walkie: 1
id: rt
mode: roundtable
implementer: ada
reviewers: [brook, cy]
grader: [true]
workspace: work
max_rounds: 4
---
# Briefing
Build it.
`

// A reviewer stand-in writes the round's verdict to $WALKIE_VERDICT (or
// --verdict-file) and leaves the record alone; an implementer stand-in
// runs the round's shell snippet in its working directory before it
// appends its turn.
func TestRoundtableStandIns(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "rt.walkie.md")
	if err := os.WriteFile(record, []byte(roundtableRecord), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "brook.yaml")
	if err := os.WriteFile(script, []byte(`behavior: verdict
verdicts:
  - '{"verdict": "request_changes", "objections": [{"rule": "r", "failing_input": "x", "blocking": true, "summary": "{agent} in round {round}"}]}'
  - '{"verdict": "approve", "objections": []}'
`), 0o644); err != nil {
		t.Fatal(err)
	}
	verdict := filepath.Join(dir, "verdict.json")
	t.Setenv("WALKIE_VERDICT", verdict)
	for round, want := range map[string]string{"1": `"summary": "brook in round 1"`, "3": `"verdict": "approve"`} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{"--file", record, "--agent", "brook", "--round", round, "--script", script}, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("round %s: exit %d: %s", round, code, stderr.String())
		}
		if b, _ := os.ReadFile(verdict); !strings.Contains(string(b), want) {
			t.Fatalf("round %s: verdict %q, want %s", round, b, want)
		}
	}
	if b, _ := os.ReadFile(record); string(b) != roundtableRecord {
		t.Fatal("the verdict behaviour changed the record")
	}
	other := filepath.Join(dir, "other.json")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"--file", record, "--agent", "cy", "--behavior", "verdict", "--verdict-file", other}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if b, _ := os.ReadFile(other); !strings.Contains(string(b), `"approve"`) {
		t.Fatalf("default verdict %q", b)
	}

	// The implementer: shell per round, run before the turn is appended.
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	stdout.Reset()
	stderr.Reset()
	if code := run(context.Background(), []string{"--file", record, "--agent", "ada", "--round", "2", "--shell", "echo {agent} round {round} > code.txt; grep -c '^## Turn' ../rt.walkie.md || true"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if b, _ := os.ReadFile(filepath.Join(work, "code.txt")); string(b) != "ada round 2\n" {
		t.Fatalf("code.txt = %q", b)
	}
	if !strings.HasPrefix(stdout.String(), "0\n") {
		t.Fatalf("the snippet did not run before the turn was appended: %q", stdout.String())
	}
	if b, _ := os.ReadFile(record); !strings.Contains(string(b), "## Turn 1 · ada") {
		t.Fatal("no turn appended after the snippet")
	}
	// A failing snippet ends the agent before it writes anything.
	before, _ := os.ReadFile(record)
	if code := run(context.Background(), []string{"--file", record, "--agent", "ada", "--shell", "exit 3"}, nil, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2 for a failing snippet", code)
	}
	if after, _ := os.ReadFile(record); !bytes.Equal(before, after) {
		t.Fatal("a failing snippet still appended a turn")
	}
}
