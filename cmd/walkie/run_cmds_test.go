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

func TestRunCommandsParse(t *testing.T) {
	file := mustInit(t, filepath.Join(t.TempDir(), "d.walkie.md"))
	got := parse(t, autoCommand, file, "--agents", "claude,codex", "--max-rounds", "4", "--approve", "--json", "--log-format", "json",
		"--no-notify", "--notify-timeout", "5s", "--take-over", "--config", "w.yaml", "-v")
	want := &runOptions{File: file, ConfigPath: "w.yaml", Agents: []string{"claude", "codex"}, By: "walkie auto", MaxRounds: 4, Approve: true,
		JSON: true, TakeOver: true, LogFormat: "json", Verbose: true, Notify: notifyOptions{Off: true, Timeout: 5 * time.Second}}
	got.IO, got.Config, got.Logger, got.Registry, got.Ledger = nil, nil, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("auto options\n got %+v\nwant %+v", got, want)
	}
	if o := parse(t, turnCommand, file); !o.Once || o.By != "walkie turn" || o.LogFormat != "auto" || o.Notify.Timeout != 30*time.Second {
		t.Errorf("turn options %+v", o)
	}
}

// auto on a debate a person halted: nothing runs; the summary says how it
// stands and why, and the exit code is halted's.
func TestRunCommandsRun(t *testing.T) {
	ctx := context.Background()
	file := mustInit(t, filepath.Join(t.TempDir(), "d.walkie.md"))
	if _, err := walkie.Append(file, walkie.Post{From: "ada", Body: []byte("Cursors.\n")}); err != nil {
		t.Fatal(err)
	}
	if err := walkie.Halt(file, "going in circles"); err != nil {
		t.Fatal(err)
	}
	f := fakeFactory("")
	o := &runOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry, Ledger: f.Ledger, File: file, By: "walkie auto", LogFormat: "auto", Notify: notifyOptions{Off: true}}
	out, errOut, code := f.run(t, func() error { return autoRun(ctx, o) })
	if code != exitHalted {
		t.Errorf("exit %d, want %d", code, exitHalted)
	}
	for _, want := range []string{file + ": halted after 1 turn in 1 round: going in circles\n", "Where each party stands:\n", "  ada  turn 1      Cursors.\n", "record: " + file + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "stopped: halted (going in circles)\n") {
		t.Errorf("the progress lines lack the end:\n%s", errOut)
	}
}

func TestNewCommandParse(t *testing.T) {
	dir := t.TempDir()
	o := parse(t, newCommand, "Cursors or offsets?", "--agents", "ada,brook", "--yes", "--file", filepath.Join(dir, "q.walkie.md"), "--from", "chat.md", "--distiller", "codex")
	if o.Question != "Cursors or offsets?" || !o.Yes || o.From != "chat.md" || !o.FromSet || o.BriefingSet || o.Distiller != "codex" ||
		!reflect.DeepEqual(o.Init.Participants, []string{"ada", "brook"}) || o.Init.MaxRounds != 6 {
		t.Errorf("new options %+v", o)
	}
}

// walkie new settles what can refuse before it creates anything.
func TestNewCommandRefusesFirst(t *testing.T) {
	ctx := context.Background()
	t.Chdir(t.TempDir())
	f := fakeFactory("")
	o := &newOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry, Ledger: f.Ledger, Question: "Cursors?", Init: walkie.InitOptions{Participants: []string{"ada", "brook"}}}
	_, _, code := f.run(t, func() error { return newRun(ctx, o) })
	if code != exitBadInput {
		t.Errorf("new off a terminal without --yes: exit %d, want %d", code, exitBadInput)
	}
	o.Yes, o.FromSet, o.BriefingSet = true, true, true
	_, _, code = f.run(t, func() error { return newRun(ctx, o) })
	if code != exitBadInput {
		t.Errorf("new with --from and --briefing: exit %d, want %d", code, exitBadInput)
	}
	if m, _ := filepath.Glob("*"); len(m) > 0 {
		t.Errorf("new created %v before it refused", m)
	}
}

// walkie new runs its debate as walkie auto would, and its notifications
// get auto's default time to go out at exit. Before, new read the
// --notify-timeout it does not have as 0, and the queue was cut at once.
func TestNewRunsItsDebateAsAutoDoes(t *testing.T) {
	f := fakeFactory("")
	o := &newOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry, Ledger: f.Ledger, ConfigPath: "w.yaml", JSON: true, LogFormat: "json",
		Init: walkie.InitOptions{MaxRounds: 4}}
	got := o.debate("q.walkie.md")
	got.IO, got.Config, got.Logger, got.Registry, got.Ledger = nil, nil, nil, nil, nil
	want := &runOptions{File: "q.walkie.md", ConfigPath: "w.yaml", By: "walkie new", JSON: true, LogFormat: "json", Notify: notifyOptions{Timeout: 30 * time.Second}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("new's run\n got %+v\nwant %+v", got, want)
	}
	auto := parse(t, autoCommand, mustInit(t, filepath.Join(t.TempDir(), "d.walkie.md")))
	if auto.Notify != got.Notify {
		t.Errorf("auto's notify options %+v, new's %+v", auto.Notify, got.Notify)
	}
}
