package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// agentFile is a config whose only mark is an agent named after where it lives.
func agentFile(name string) string {
	return "agents:\n  " + name + ":\n    command: [true]\n"
}

func TestLoadSearchOrder(t *testing.T) {
	tests := []struct {
		name      string
		explicit  bool // pass the explicit file
		local     bool // ./walkie.yaml exists
		user      bool // $XDG_CONFIG_HOME/walkie/config.yaml exists
		wantAgent string
		wantPath  string // "explicit", "local", "user" or ""
	}{
		{"nothing", false, false, false, "", ""},
		{"user only", false, false, true, "from-user", "user"},
		{"local beats user", false, true, true, "from-local", "local"},
		{"explicit beats all", true, true, true, "from-explicit", "explicit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			work := filepath.Join(root, "work")
			xdg := filepath.Join(root, "xdg")
			t.Setenv("XDG_CONFIG_HOME", xdg)
			t.Setenv("HOME", filepath.Join(root, "home"))
			paths := map[string]string{
				"explicit": filepath.Join(root, "elsewhere", "my.yaml"),
				"local":    FileName,
				"user":     filepath.Join(xdg, "walkie", "config.yaml"),
			}
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			t.Chdir(work)
			explicit := ""
			if tt.explicit {
				explicit = paths["explicit"]
				write(t, explicit, agentFile("from-explicit"))
			}
			if tt.local {
				write(t, FileName, agentFile("from-local"))
			}
			if tt.user {
				write(t, paths["user"], agentFile("from-user"))
			}
			c, err := Load(explicit)
			if err != nil {
				t.Fatal(err)
			}
			if c.Path != paths[tt.wantPath] {
				t.Errorf("Path = %q, want %q", c.Path, paths[tt.wantPath])
			}
			for _, n := range []string{"from-explicit", "from-local", "from-user"} {
				_, has := c.Agents[n]
				if has != (n == tt.wantAgent) {
					t.Errorf("agent %s present = %v", n, has)
				}
			}
			if _, err := c.Agent("claude"); err != nil {
				t.Errorf("presets missing: %v", err)
			}
		})
	}
}

func TestLoadHomeFallback(t *testing.T) {
	// Without XDG_CONFIG_HOME, the user config dir is $HOME/.config on Linux.
	root := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", root)
	t.Chdir(t.TempDir())
	dir, err := os.UserConfigDir()
	if err != nil {
		t.Skip(err)
	}
	p := filepath.Join(dir, "walkie", "config.yaml")
	write(t, p, agentFile("homed"))
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Path != p {
		t.Errorf("Path %q, want %q", c.Path, p)
	}
}

func TestLoadErrors(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "xdg"))
	t.Chdir(root)

	_, err := Load(filepath.Join(root, "missing.yaml"))
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("explicit missing file: %v", err)
	}

	write(t, FileName, "defaults:\n  timeout: 15\n")
	_, err = Load("")
	if want := `config walkie.yaml:2: defaults.timeout: "15" is not a duration (write e.g. 15m)`; err == nil || err.Error() != want {
		t.Errorf("err\n got %v\nwant %s", err, want)
	}

	// A bad local file is an error, not a reason to fall through to the user's.
	write(t, filepath.Join(root, "xdg", "walkie", "config.yaml"), agentFile("user"))
	if _, err := Load(""); err == nil {
		t.Error("a broken ./walkie.yaml was skipped")
	}

	// A directory where the file should be is reported, not skipped.
	if err := os.Remove(FileName); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(FileName, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(""); err == nil {
		t.Error("./walkie.yaml as a directory was skipped")
	}
}

func TestSearchPaths(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/x")
	got := SearchPaths()
	if len(got) != 2 || got[0] != "walkie.yaml" || got[1] != "/x/walkie/config.yaml" {
		t.Errorf("SearchPaths = %q", got)
	}
}
