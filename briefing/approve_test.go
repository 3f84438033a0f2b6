package briefing

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// Approve is every approval of a briefing: each way one must not be
// pinned, and what a pinned one leaves behind.
func TestApprove(t *testing.T) {
	written := []byte("## Question\nCursors or offsets for GET /v1/orders, with inserts during a scan?\n")
	tests := []struct {
		name    string
		text    []byte // the briefing in the file
		shown   []byte // what the person read; nil: the same
		entry   bool   // the debate has begun
		blocked bool   // the state directory cannot take the kept copy
		want    error  // errors.Is; nil: pinned
	}{
		{name: "written", text: written},
		{name: "the bare template", text: []byte(Template()), want: ErrPlaceholder},
		{name: "changed while shown", text: written, shown: []byte("## Question\nOffsets?\n"), want: ErrChanged},
		{name: "begun", text: written, entry: true, want: &walkie.RefusedError{}},
		{name: "copy not kept", text: written, blocked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "d.walkie.md")
			if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"ada", "brook"}, MaxRounds: 2, Briefing: tt.text}); err != nil {
				t.Fatal(err)
			}
			d, err := walkie.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			shown := tt.shown
			if shown == nil {
				shown = d.Briefing
			}
			if tt.entry {
				if _, err := walkie.Append(file, walkie.Post{Supervisor: true, Body: []byte("Go on.\n")}); err != nil {
					t.Fatal(err)
				}
			}
			dir := walkie.StateDir(file, d.Meta.ID)
			if tt.blocked {
				// A directory where the kept copy goes: its rename fails.
				if err := os.MkdirAll(filepath.Join(dir, ApprovedFile), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			a, err := Approve(file, shown)
			meta, merr := walkie.ReadMeta(file)
			if merr != nil {
				t.Fatal(merr)
			}
			var refused *walkie.RefusedError
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == nil:
				if meta.BriefingSHA256 != a.Hash || a.Hash != walkie.BriefingHash(d.Briefing) {
					t.Errorf("pinned %q, Approve says %q", meta.BriefingSHA256, a.Hash)
				}
				kept, _ := ReadApproved(dir)
				if tt.blocked != (a.NotKept != nil) || !tt.blocked && !bytes.Equal(kept, d.Briefing) {
					t.Errorf("kept %q, not kept because %v", kept, a.NotKept)
				}
			case errors.As(tt.want, &refused):
				if !errors.As(err, &refused) || meta.BriefingSHA256 != "" {
					t.Errorf("got %v, pin %q; want a refusal and no pin", err, meta.BriefingSHA256)
				}
			default:
				if !errors.Is(err, tt.want) || meta.BriefingSHA256 != "" {
					t.Errorf("got %v, pin %q; want %v and no pin", err, meta.BriefingSHA256, tt.want)
				}
			}
		})
	}
}
