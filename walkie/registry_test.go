package walkie

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// The registry keeps one entry per debate file, the user's alone, drops
// entries whose file is gone, and skips what is not its own.
func TestRegistry(t *testing.T) {
	reg := filepath.Join(t.TempDir(), "debates")
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.walkie.md"), filepath.Join(dir, "sub", "a.walkie.md")
	for _, f := range []string{a, b} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Register(reg, Registered{File: f, ID: "a", PID: 1, By: "walkie auto", Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// Registered again by a later run: still one entry, the new one.
	if err := Register(reg, Registered{File: a, ID: "a", PID: 2, By: "walkie watch"}); err != nil {
		t.Fatal(err)
	}
	if err := Register(reg, Registered{File: "relative.walkie.md"}); err == nil {
		t.Error("a relative file was registered")
	}
	// Litter: a temporary file, another program's JSON, an entry whose
	// name is not its file's key.
	for name, body := range map[string]string{".x.json.tmp1": "{}", "other.json": `{"file":"/etc/passwd"}`, "notes.txt": "hi"} {
		if err := os.WriteFile(filepath.Join(reg, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadRegistry(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].File != a || got[0].PID != 2 || got[0].By != "walkie watch" || got[1].File != b {
		t.Fatalf("registry: %+v", got)
	}
	if fi, err := os.Stat(reg); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the registry directory: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(reg, Key(a)+".json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("an entry: %v %v", fi.Mode(), err)
	}
	if Key(a) == Key(b) || len(Key(a)) != 16 {
		t.Errorf("keys %q and %q", Key(a), Key(b))
	}
	// A debate whose file is gone leaves the registry at the next read.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadRegistry(reg); len(got) != 1 {
		t.Errorf("after removing a file: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(reg, Key(b)+".json")); !os.IsNotExist(err) {
		t.Errorf("the gone debate's entry stayed: %v", err)
	}
	if got, err := ReadRegistry(filepath.Join(t.TempDir(), "none")); err != nil || got != nil {
		t.Errorf("a missing registry: %v %v", got, err)
	}
}

func TestUserStateDir(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Setenv("HOME", "/Users/x")
		if got, _ := UserStateDir(); got != "/Users/x/Library/Application Support/walkie" {
			t.Errorf("macOS: %s", got)
		}
		return
	}
	t.Setenv("HOME", "/home/x")
	t.Setenv("XDG_STATE_HOME", "/state")
	if got, _ := UserStateDir(); got != "/state/walkie" {
		t.Errorf("with XDG_STATE_HOME: %s", got)
	}
	t.Setenv("XDG_STATE_HOME", "relative") // ignored, as the XDG spec says
	if got, _ := UserStateDir(); got != "/home/x/.local/state/walkie" {
		t.Errorf("without XDG_STATE_HOME: %s", got)
	}
}
