package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/walkie"
)

func TestBriefCommandsParse(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	if o := parse(t, briefDraftCommand, file, "--agents", "ada,brook", "--max-rounds", "4"); o.File != file || !o.NewFileFlags || o.MaxRounds != 4 || len(o.Agents) != 2 {
		t.Errorf("draft options %+v", o)
	}
	if o := parse(t, briefDraftCommand, "--stdout"); !o.Stdout || o.File != "" || o.NewFileFlags {
		t.Errorf("draft --stdout options %+v", o)
	}
	if o := parse(t, briefApproveCommand, file, "-y"); o.File != file || !o.Yes {
		t.Errorf("approve options %+v", o)
	}
	if o := parse(t, briefDistillCommand, file, "--from", "chat.md", "--agent", "codex", "--config", "w.yaml"); o.From != "chat.md" || o.Agent != "codex" || o.ConfigPath != "w.yaml" || o.LogFormat != "auto" {
		t.Errorf("distill options %+v", o)
	}
	if o := parse(t, briefShowCommand, file, "--json"); o.JSON == nil {
		t.Errorf("show options %+v", o)
	}
}

// A briefing drafted, shown, refused while it is the bare template, and
// approved only by a yes at the terminal.
func TestBriefCommandsRun(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	f := fakeFactory("")
	out, _, code := f.run(t, func() error {
		return briefDraftRun(ctx, &briefDraftOptions{IO: f.IO, File: file, Agents: []string{"ada", " brook"}, MaxRounds: 6, NewFileFlags: true})
	})
	if code != 0 || !strings.HasPrefix(out, "created "+file+" (participants: ada, brook) with the briefing template\n") {
		t.Fatalf("draft: exit %d, %q", code, out)
	}
	_, errOut, code := f.run(t, func() error {
		return briefApproveRun(ctx, &briefApproveOptions{IO: f.IO, File: file, Yes: true})
	})
	if code != exitBadInput {
		t.Errorf("approving the bare template: exit %d, want %d (%s)", code, exitBadInput, errOut)
	}
	text := strings.Replace(briefing.Template(), "_", "", -1) + "\nCursors or offsets for the list endpoints, given inserts during a scan.\n"
	if _, err := walkie.SetBriefing(file, []byte(text)); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = f.run(t, func() error { return briefShowRun(ctx, &briefShowOptions{IO: f.IO, File: file}) })
	if code != 0 || !strings.Contains(out, "Cursors or offsets for the list endpoints") || !strings.Contains(errOut, ", not approved (walkie brief approve "+file+")\n") {
		t.Errorf("show: exit %d\n%s\n%s", code, out, errOut)
	}
	// Nobody at a terminal, no --yes: nothing is pinned.
	_, _, code = f.run(t, func() error { return briefApproveRun(ctx, &briefApproveOptions{IO: f.IO, File: file}) })
	if code != exitBadInput {
		t.Errorf("approve without a terminal: exit %d, want %d", code, exitBadInput)
	}
	f.IO.SetStdinTTY(true)
	f.IO.In = strings.NewReader("n\n")
	out, _, code = f.run(t, func() error { return briefApproveRun(ctx, &briefApproveOptions{IO: f.IO, File: file}) })
	if code != exitError || !strings.HasSuffix(out, "Approve this briefing? [y/N] ") {
		t.Errorf("approve, answered no: exit %d, %q", code, out)
	}
	if m, _ := walkie.ReadMeta(file); m.BriefingSHA256 != "" {
		t.Fatal("pinned after a no")
	}
	f.IO.In = strings.NewReader("yes\n")
	out, _, code = f.run(t, func() error { return briefApproveRun(ctx, &briefApproveOptions{IO: f.IO, File: file}) })
	m, _ := walkie.ReadMeta(file)
	if code != 0 || m.BriefingSHA256 == "" || !strings.HasSuffix(out, file+": briefing approved, briefing_sha256 "+m.BriefingSHA256+"\n") {
		t.Errorf("approve, answered yes: exit %d, pin %q\n%s", code, m.BriefingSHA256, out)
	}
	out, _, code = f.run(t, func() error { return briefApproveRun(ctx, &briefApproveOptions{IO: f.IO, File: file}) })
	if code != 0 || out != file+": the briefing is already approved (sha256 "+m.BriefingSHA256[:12]+")\n" {
		t.Errorf("approve again: exit %d, %q", code, out)
	}
}
