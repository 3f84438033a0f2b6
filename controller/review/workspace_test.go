package review

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/controller/review/reviewtest"
)

func TestLeftOut(t *testing.T) {
	for p, want := range map[string]bool{
		".claude": true, ".claude/settings.json": true, "sub/.claude/settings.local.json": true, ".mcp.json": true, "a/.mcp.json": true,
		".gemini/settings.json": true, ".codex/config.toml": true, ".walkie/x/state.json": true,
		"claude.md": false, "docs/.claude.md": false, "mcp.json": false, ".github/workflows/x.yml": false, "CLAUDE.md": false,
	} {
		if got := leftOut(p); got != want {
			t.Errorf("leftOut(%q) = %v", p, got)
		}
	}
}

// The copy holds what the head commit holds, less the CLI settings and
// the names the debate needs; what agents change in it is listed, and
// clearing it leaves only the debate's files.
func TestWorkspace(t *testing.T) {
	repo := reviewtest.NewRepo(t, map[string]string{"a.md": "a\n"}, map[string]string{
		"a.md": "a2\n", "bin/run.sh": "#!/bin/sh\n", "docs/x.md": "x\n",
		".claude/settings.json": "{}\n", ".mcp.json": "{}\n", "sub/.gemini/settings.json": "{}\n",
		"r.walkie.md": "the commit's own file of that name\n", ".walkie/r/state.json": "{}\n",
	})
	if err := os.Symlink("docs/x.md", filepath.Join(repo.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(repo.Dir, "bin/run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo.Git(t, "add", "link", "bin/run.sh")
	repo.Git(t, "commit", "-q", "-m", "a link and a script")
	head := repo.Git(t, "rev-parse", "HEAD")[:40]
	dir := filepath.Join(t.TempDir(), "copy")
	ws, err := makeWorkspace(context.Background(), repo.Dir, head, dir, "r.walkie.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".claude", ".mcp.json", ".walkie", "r.walkie.md", "sub/.gemini"}; !slices.Equal(sorted(ws.left), want) {
		t.Errorf("left out %v, want %v", ws.left, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.md")); err != nil || string(b) != "a2\n" {
		t.Errorf("a.md: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "bin/run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("bin/run.sh lost its mode: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "link")); err != nil || l != "docs/x.md" {
		t.Errorf("link: %q %v", l, err)
	}
	if ch, err := ws.changes(); err != nil || len(ch) != 0 {
		t.Fatalf("a fresh copy has changes: %v %v", ch, err)
	}
	// The debate writes its files; an agent edits, adds, removes, chmods.
	write(t, filepath.Join(dir, "r.walkie.md"), "record\n")
	write(t, filepath.Join(dir, ".walkie/r/state.json"), "{}\n")
	write(t, filepath.Join(dir, "a.md"), "changed\n")
	write(t, filepath.Join(dir, "new/file"), "new\n")
	if err := os.Remove(filepath.Join(dir, "docs/x.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "bin/run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	ch, err := ws.changes()
	if want := []string{"modified a.md", "modified bin/run.sh", "removed docs/x.md", "added new/file"}; err != nil || !slices.Equal(ch, want) {
		t.Errorf("changes %v, want %v (%v)", ch, want, err)
	}
	if err := ws.clear(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{".walkie", "r.walkie.md"}) {
		t.Errorf("after clear: %v", names)
	}
	if _, err := makeWorkspace(context.Background(), repo.Dir, head, dir, "r.walkie.md"); err == nil {
		t.Error("a copy was made over an existing directory")
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDocID(t *testing.T) {
	for in, want := range map[string]string{
		"docs/design/cache.md":  "review-docs-design-cache",
		"Design Notes/ü ber.md": "review-Design-Notes-ber",
		"-x.md":                 "review-x",
		"docs/a.b.md":           "review-docs-a.b",
	} {
		if got := docID(in); got != want {
			t.Errorf("docID(%q) = %q, want %q", in, got, want)
		}
	}
	long := docID("docs/" + string(slices.Repeat([]byte("x"), 200)) + ".md")
	if len(long) > 56 {
		t.Errorf("%d bytes", len(long))
	}
	seen := map[string]bool{}
	if a, b, c := uniqueID("x", seen), uniqueID("x", seen), uniqueID("x", seen); a != "x" || b != "x-2" || c != "x-3" {
		t.Errorf("%s %s %s", a, b, c)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{"docs/a.md": "docs/a.md", "a b.md": "'a b.md'", "it's.md": `'it'\''s.md'`, "": "''", "$(x)": "'$(x)'"} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// What an agent leaves in its copy where the commit had a file — a named
// pipe, a link to a device — is a change, and is never opened: opening
// the pipe held walkie review for 739 s and through a SIGTERM (issue 27,
// item 7). Reading the document back refuses both.
func TestWorkspaceChangesOpenNothingButFiles(t *testing.T) {
	repo := reviewtest.NewRepo(t, map[string]string{"a.md": "a\n"}, map[string]string{"a.md": "a2\n", "docs/x.md": "x\n", "docs/y.md": "y\n"})
	dir := filepath.Join(t.TempDir(), "copy")
	ws, err := makeWorkspace(context.Background(), repo.Dir, repo.Head, dir, "r.walkie.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a.md", "docs/x.md"} {
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "a.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "docs/x.md")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "new.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ch []string
	bounded(t, "listing the changes", func() { ch, err = ws.changes() })
	if want := []string{"modified a.md", "modified docs/x.md", "added new.fifo"}; err != nil || !slices.Equal(ch, want) {
		t.Errorf("changes %v, want %v (%v)", ch, want, err)
	}
	for _, p := range []string{"a.md", "docs/x.md"} {
		var b []byte
		bounded(t, "reading "+p, func() { b, err = ws.readFile(p) })
		if err == nil {
			t.Errorf("%s read as %d bytes, want it refused", p, len(b))
		}
	}
}

// bounded runs fn, failing the test if it is still running after 20s (a
// read waiting on a named pipe) rather than hanging the test binary.
func bounded(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s still waits after 20s", what)
	}
}
