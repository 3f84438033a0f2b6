package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// converged is a debate of ada and brook that converged in round 1: two
// signed turns.
func converged(t *testing.T) string {
	t.Helper()
	file := mustInit(t, filepath.Join(t.TempDir(), "d.walkie.md"))
	for _, p := range []walkie.Post{
		{From: "ada", Body: []byte("Cursors: they survive inserts.\n"), Sign: true},
		{From: "brook", Body: []byte("Agreed: **cursors**.\n"), Sign: true},
	} {
		if _, err := walkie.Append(file, p); err != nil {
			t.Fatal(err)
		}
	}
	return file
}

func TestReadingCommandsParse(t *testing.T) {
	file := converged(t)
	if o := parse(t, showCommand, file, "--raw"); o.File != file || !o.Raw {
		t.Errorf("show options %+v", o)
	}
	if o := parse(t, followCommand, file, "--last", "2"); o.File != file || o.Last != 2 {
		t.Errorf("follow options %+v", o)
	}
	if o := parse(t, followCommand, file); o.Last != -1 {
		t.Errorf("follow without --last: %+v", o)
	}
	if o := parse(t, logCommand, file, "--json"); o.File != file || o.JSON == nil {
		t.Errorf("log options %+v", o)
	}
	if o := parse(t, readCommand, file, "--since", "1", "--type", "verdict,close"); o.Since != 1 || !reflect.DeepEqual(o.Types, []string{"verdict", "close"}) {
		t.Errorf("read options %+v", o)
	}
	if o := parse(t, reportCommand, file, "--format", "json", "--quorum", "1", "--reviewers", "a,b"); o.Format != "json" || o.Quorum != "1" || !reflect.DeepEqual(o.Reviewers, []string{"a", "b"}) {
		t.Errorf("report options %+v", o)
	}
}

// show, follow, log, read and report print a converged debate.
func TestReadingCommandsRun(t *testing.T) {
	ctx := context.Background()
	file := converged(t)
	f := fakeFactory("")

	out, _, code := f.run(t, func() error { return showRun(ctx, &showOptions{IO: f.IO, File: file}) })
	for _, want := range []string{"d · converged · ada, brook\n", "── Briefing ──", "── Turn 2 · brook · walkie post · round 1 · ", " · signed off ──", "  Agreed: **cursors**.\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show: exit %d, lacks %q:\n%s", code, want, out)
		}
	}

	out, _, code = f.run(t, func() error { return followRun(ctx, &followOptions{IO: f.IO, File: file, Last: 1}) })
	for _, want := range []string{"(1 entry before these: walkie show " + file + ")", "── Turn 2 · brook", file + ": converged after 2 turns in 1 round", "Agreed, signed off by ada and brook:"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("follow: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, "── Briefing") {
		t.Errorf("follow --last 1 showed the briefing:\n%s", out)
	}

	out, _, code = f.run(t, func() error { return readRun(ctx, &readOptions{IO: f.IO, File: file, Since: 1}) })
	if code != 0 || !strings.HasPrefix(out, "## Turn 2 · brook\n") || !strings.Contains(out, "<!-- walkie seq=2 ") {
		t.Errorf("read --since 1: exit %d:\n%s", code, out)
	}

	out, _, code = f.run(t, func() error { return logRun(ctx, &logOptions{IO: f.IO, File: file}) })
	// No attempt, and both turns posted with walkie post: a line each.
	if code != 0 || strings.Count(out, "posted with walkie post: no session walkie ran wrote it\n") != 2 {
		t.Errorf("log: exit %d, %q", code, out)
	}
	line := `{"turn":1,"round":1,"agent":"ada","attempt":1,"started":"2026-11-30T02:00:00Z","duration_ms":1500,"outcome":"accepted","usage":{"cost_usd":0.0042,"cost_source":"reported","input_tokens":12300,"cached_input_tokens":8100,"output_tokens":212},"model":"opus"}`
	if _, _, err := walkie.ChangeState(file, walkie.StateDir(file, "d"), walkie.StateChange{Op: walkie.OpEnded, Attempt: json.RawMessage(line)},
		func(*walkie.Doc, []byte, *walkie.State) error { return nil }); err != nil {
		t.Fatal(err)
	}
	out, _, code = f.run(t, func() error { return logRun(ctx, &logOptions{IO: f.IO, File: file}) })
	for _, want := range []string{"TURN  AGENT  TRY  START", "1.5s", "accepted", "$0.0042", "opus", "12.3k in (8.1k cached), 212 out", "total cost $0.0042\n", "tokens 12.3k in (8.1k cached), 212 out\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("log: exit %d, lacks %q:\n%s", code, want, out)
		}
	}

	out, _, code = f.run(t, func() error {
		return reportRun(ctx, &reportOptions{IO: f.IO, Config: f.Config, File: file, Format: "markdown"})
	})
	for _, want := range []string{"# Debate d\n", "- outcome: **converged**", "- rounds: 1 of at most 2, 2 turns\n", "| ada | ", "| 12.3k in (8.1k cached), 212 out |", "| total | | 1 | $0.00 | 12.3k in (8.1k cached), 212 out |"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("report: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
}

// Bytes after the last stamped entry are damage to verify, and while a
// controller runs the debate they may be its agent's turn: verify says so
// rather than only sending the user to a repair that would refuse.
func TestVerifyWhileAControllerRuns(t *testing.T) {
	ctx := context.Background()
	file := converged(t)
	f := fakeFactory("")
	fh, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString("\n## Turn 3 · ada\nHalf a thought"); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	verify := func() (string, int) {
		var err error
		_, _, code := f.run(t, func() error { err = verifyRun(ctx, &fileOptions{IO: f.IO, File: file}); return err })
		if err == nil {
			return "", code
		}
		return err.Error(), code
	}
	if msg, code := verify(); code != exitUnverified || !strings.Contains(msg, "unstamped bytes") || strings.Contains(msg, "controller is running") {
		t.Errorf("at rest: exit %d, %s", code, msg)
	}
	lock, err := walkie.TryRunLock(walkie.StateDir(file, "d"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	if msg, code := verify(); code != exitUnverified || !strings.Contains(msg, "a controller is running this debate") {
		t.Errorf("while a controller runs: exit %d, %s", code, msg)
	}
}
