package skills

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A link at each step on the way to the skill, or in its place, and a
// named pipe where SKILL.md goes: Install and Remove refuse each, and
// nothing where it leads is written, removed or waited on.
func TestNoLinkOnTheWay(t *testing.T) {
	text := Render("claude", "v1.2.3")
	tests := []struct {
		name string
		at   string // made a link to the outside
		pipe bool   // SKILL.md is a named pipe instead
		want string // what the refusal says; "" for a *LinkError
	}{
		{name: ".claude", at: ".claude"},
		{name: "the skills folder", at: ".claude/skills"},
		{name: "the skill's folder", at: ".claude/skills/walkie-debate"},
		{name: "SKILL.md", at: ".claude/skills/walkie-debate/SKILL.md"},
		{name: "a named pipe", pipe: true, want: ".claude/skills/walkie-debate/SKILL.md is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			p := Place{Root: root, Dirs: []string{".claude", "skills", Name}}
			theirs := filepath.Join(outside, "SKILL.md")
			if err := os.WriteFile(theirs, Render("claude", "v0.0.1"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.pipe {
				if err := os.MkdirAll(filepath.Join(root, ".claude/skills", Name), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(p.Path(), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				link := filepath.Join(root, tt.at)
				if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
					t.Fatal(err)
				}
				target := outside
				if filepath.Base(tt.at) == "SKILL.md" {
					target = theirs
				}
				if err := os.Symlink(target, link); err != nil {
					t.Fatal(err)
				}
			}
			for op, run := range map[string]func() error{
				"install": func() error { _, err := Install(p, text); return err },
				"remove":  func() error { _, err := Remove(p); return err },
			} {
				err := run()
				var link *LinkError
				switch {
				case tt.want == "" && (!errors.As(err, &link) || link.Path != filepath.Join(root, tt.at)):
					t.Errorf("%s: %v, want a link refused at %s", op, err, tt.at)
				case tt.want != "" && (err == nil || err.Error() != filepath.Join(root, tt.want)):
					t.Errorf("%s: %v, want %q", op, err, tt.want)
				}
			}
			if b, err := os.ReadFile(theirs); err != nil || string(b) != string(Render("claude", "v0.0.1")) {
				t.Errorf("the file outside changed: %v\n%s", err, b)
			}
			if m, _ := filepath.Glob(filepath.Join(outside, "*")); len(m) != 1 {
				t.Errorf("written outside: %v", m)
			}
		})
	}
}

// Through real folders: installed, installed again, not replacing a
// person's file, removed with its folder.
func TestInstallAndRemove(t *testing.T) {
	root := t.TempDir()
	p := Place{Root: filepath.Join(root, "home"), Dirs: []string{".codex", "skills", Name}}
	if res, err := Install(p, Render("codex", "v1")); err != nil || res != Done {
		t.Fatalf("install: %v, %v", res, err)
	}
	if res, err := Install(p, Render("codex", "v1")); err != nil || res != Already {
		t.Fatalf("install again: %v, %v", res, err)
	}
	if res, err := Install(p, Render("codex", "v2")); err != nil || res != Done {
		t.Fatalf("install a newer one: %v, %v", res, err)
	}
	if b, _ := os.ReadFile(p.Path()); string(b) != string(Render("codex", "v2")) {
		t.Fatalf("installed:\n%s", b)
	}
	if fi, err := os.Stat(p.Path()); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	if res, err := Remove(p); err != nil || res != Done {
		t.Fatalf("remove: %v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Dir(p.Path())); !os.IsNotExist(err) {
		t.Fatalf("the skill's folder stays: %v", err)
	}
	if res, err := Remove(p); err != nil || res != Absent {
		t.Fatalf("remove again: %v, %v", res, err)
	}
	if err := os.MkdirAll(filepath.Dir(p.Path()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Path(), []byte("my own skill\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for op, err := range map[string]error{"install": second(Install(p, Render("codex", "v2"))), "remove": second(Remove(p))} {
		if !errors.Is(err, ErrNotWalkies) {
			t.Errorf("%s over a person's file: %v", op, err)
		}
	}
	if b, _ := os.ReadFile(p.Path()); string(b) != "my own skill\n" {
		t.Errorf("a person's file changed:\n%s", b)
	}
}

func second(_ Result, err error) error { return err }
