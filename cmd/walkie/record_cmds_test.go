package main

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// The urfave part of the record commands only fills their options: the
// flags after FILE, as every example in the docs writes them.
func TestRecordCommandsParse(t *testing.T) {
	file := mustInit(t, filepath.Join(t.TempDir(), "d.walkie.md"))
	got := parse(t, postCommand, file, "--from", "codex", "--sign", "--wait", "2m", "--type", "verdict", "--verdict", "approve", "--refs", "main@3f2a9c1", "--verify-refs=false")
	want := &postOptions{File: file, From: "codex", Sign: true, BodyFile: "-", Wait: 2 * time.Minute, Type: "verdict", Verdict: "approve", Refs: "main@3f2a9c1"}
	got.IO = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("post options\n got %+v\nwant %+v", got, want)
	}
	fresh := filepath.Join(filepath.Dir(file), "new.walkie.md")
	in := parse(t, initCommand, fresh, "--agents", "ada, brook", "--max-rounds", "3", "--copy", "off", "--briefing", "-")
	if in.File != fresh || in.Briefing != "-" || !reflect.DeepEqual(in.Init.Participants, []string{"ada", "brook"}) || in.Init.MaxRounds != 3 || !in.Init.NoCopy {
		t.Errorf("init options %+v", in)
	}
	if h := parse(t, haltCommand, file, "--reason", "naming"); h.Reason != "naming" || h.File != file {
		t.Errorf("halt options %+v", h)
	}
	if e := parse(t, extendCommand, file, "--rounds", "2"); e.Rounds != 2 {
		t.Errorf("extend options %+v", e)
	}
	if s := parse(t, statusCommand, filepath.Dir(file), "--json"); s.Dir != filepath.Dir(file) || s.File != "" || s.JSON == nil {
		t.Errorf("status options of a directory %+v", s)
	}
}

// mustInit makes file a debate of ada and brook, two people, its
// briefing approved.
func mustInit(t *testing.T, file string) string {
	t.Helper()
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"ada", "brook"}, People: []string{"ada", "brook"}, MaxRounds: 2, Briefing: []byte("Cursors or offsets?\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	return file
}

// The record commands' run functions, with a fake factory: what each
// prints, as a person at the terminal reads it.
func TestRecordCommandsRun(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	f := fakeFactory("Cursors or offsets?\n")
	out, _, code := f.run(t, func() error {
		return initRun(ctx, &initOptions{IO: f.IO, Config: f.Config, File: file, Briefing: "-",
			Init: walkie.InitOptions{Participants: []string{"ada", "brook"}, People: []string{"ada", "brook"}, MaxRounds: 2}})
	})
	if code != 0 || out != "created "+file+" (participants: ada, brook; people: ada, brook)\n" {
		t.Fatalf("init: exit %d, %q", code, out)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	f.IO.In = strings.NewReader("Cursors: they survive inserts.\n")
	out, _, code = f.run(t, func() error {
		return postRun(ctx, &postOptions{IO: f.IO, File: file, From: "ada", BodyFile: "-", VerifyRefs: true})
	})
	if code != 0 || out != "recorded turn 1 by ada (seq 1); status open\n" {
		t.Fatalf("post: exit %d, %q", code, out)
	}
	out, _, code = f.run(t, func() error { return haltRun(ctx, &haltOptions{IO: f.IO, File: file, Reason: "going in circles"}) })
	if code != 0 || !strings.HasPrefix(out, "halted "+file) {
		t.Fatalf("halt: exit %d, %q", code, out)
	}
	out, _, code = f.run(t, func() error { return statusRun(ctx, &statusOptions{IO: f.IO, File: file}) })
	for _, want := range []string{"debate   d (" + file + ")\n", "status   halted — going in circles\n", "turns    1 recorded, ended in round 1 of 2\n", "briefing approved\n"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("status: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
	out, _, code = f.run(t, func() error { return resumeRun(ctx, &resumeOptions{IO: f.IO, Config: f.Config, File: file}) })
	if code != 0 || out != "resumed "+file+"\n" {
		t.Errorf("resume: exit %d, %q", code, out)
	}
	out, _, code = f.run(t, func() error { return extendRun(ctx, &extendOptions{IO: f.IO, File: file, Rounds: 2}) })
	if code != 0 || out != file+": round cap is now 4\n" {
		t.Errorf("extend: exit %d, %q", code, out)
	}
	out, _, code = f.run(t, func() error { return verifyRun(ctx, &fileOptions{IO: f.IO, File: file}) })
	if code != 0 || !strings.HasPrefix(out, file+": ok, 1 entry, chain sha256:") {
		t.Errorf("verify: exit %d, %q", code, out)
	}
	// Out of turn: refused, with whose turn it is.
	f.IO.In = strings.NewReader("Me again.\n")
	_, _, code = f.run(t, func() error {
		return postRun(ctx, &postOptions{IO: f.IO, File: file, From: "ada", BodyFile: "-"})
	})
	if code != exitRefused {
		t.Errorf("a post out of turn: exit %d, want %d", code, exitRefused)
	}
}
