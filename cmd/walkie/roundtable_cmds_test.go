package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const phasedTable = `---
walkie: 2
id: ph
mode: roundtable
implementer: ada
reviewers: [brook]
phases:
  - research: gem
  - plan: cla
grader: "test -s calc"
workspace: work
max_rounds: 2
---
# Briefing
Write work/calc, an integer calculator.
`

func phased(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "ph.walkie.md")
	if err := os.WriteFile(file, []byte(phasedTable), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestRoundTableCommandsParse(t *testing.T) {
	file := phased(t)
	if o := parse(t, phaseApproveCommand, file, "research", "--yes"); o.File != file || o.Kind != "research" || !o.Yes {
		t.Errorf("phase approve options %+v", o)
	}
	if o := parse(t, phaseShowCommand, file, "--json"); o.Kind != "" || o.JSON == nil {
		t.Errorf("phase show options %+v", o)
	}
	o := parse(t, trialsCommand, file, "-n", "5", "--parallel", "2", "--approve", "--format", "json", "--agents", "ada=claude")
	if o.File != file || o.N != 5 || o.Parallel != 2 || !o.Approve || o.Format != "json" || len(o.Agents) != 1 || o.Dir != "" {
		t.Errorf("trials options %+v", o)
	}
}

// The phases of a round table nobody has run yet, and the trials of a
// directory that holds none.
func TestRoundTableCommandsRun(t *testing.T) {
	ctx := context.Background()
	file := phased(t)
	f := fakeFactory("")
	out, _, code := f.run(t, func() error { return phaseShowRun(ctx, &phaseOptions{IO: f.IO, File: file}) })
	want := "| phase | agent | state | attempts | time | cost | sha256 |\n|---|---|---|---|---|---|---|\n" +
		"| research | gem | not run | 0 | — | $0.00 | — |\n| plan | cla | not run | 0 | — | $0.00 | — |\n"
	if code != 0 || out != want {
		t.Errorf("phase show: exit %d\n%s\nwant\n%s", code, out, want)
	}
	_, _, code = f.run(t, func() error {
		return phaseApproveRun(ctx, &phaseOptions{IO: f.IO, File: file, Kind: "plan", Yes: true})
	})
	if code != exitRefused {
		t.Errorf("approving a phase not run: exit %d, want %d", code, exitRefused)
	}
	_, _, code = f.run(t, func() error { return phaseRedoRun(ctx, &phaseOptions{IO: f.IO, File: file, Kind: "design"}) })
	if code != exitBadInput {
		t.Errorf("redoing a phase the table lacks: exit %d, want %d", code, exitBadInput)
	}
	_, _, code = f.run(t, func() error {
		return trialsReportRun(ctx, &trialsReportOptions{IO: f.IO, Dir: t.TempDir(), Format: "markdown"})
	})
	if code != exitBadInput {
		t.Errorf("trials report of an empty directory: exit %d, want %d", code, exitBadInput)
	}
	out, _, code = f.run(t, func() error {
		return reportRun(ctx, &reportOptions{IO: f.IO, Config: f.Config, File: file, Format: "markdown"})
	})
	if code != 0 || !strings.HasPrefix(out, "# Round table ph\n") || !strings.Contains(out, "## Phases\n") {
		t.Errorf("report: exit %d\n%s", code, out)
	}
}
