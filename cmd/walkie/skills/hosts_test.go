package skills

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// walkie mcp is added to a host's JSON settings and taken out again, and
// everything else in the file comes back as it was, in its order.
func TestRegisterJSON(t *testing.T) {
	for _, c := range []struct{ name, before, registered string }{
		{"no file", "", "{\n  \"mcpServers\": {\n    \"walkie\": {\n      \"args\": [\n        \"mcp\"\n      ],\n      \"command\": \"walkie\",\n      \"type\": \"stdio\"\n    }\n  }\n}\n"},
		{"other keys and servers", `{"zeta":1,"mcpServers":{"other":{"command":"x"}},"alpha":[1,2]}`,
			"{\n  \"zeta\": 1,\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"x\"\n    },\n    \"walkie\": {\n      \"args\": [\n        \"mcp\"\n      ],\n      \"command\": \"walkie\",\n      \"type\": \"stdio\"\n    }\n  },\n  \"alpha\": [\n    1,\n    2\n  ]\n}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Registration{Host: "claude", Path: filepath.Join(t.TempDir(), ".claude.json")}
			if c.before != "" {
				write(t, r.Path, c.before)
			}
			if res, err := Register(r); err != nil || res != Done {
				t.Fatalf("register: %v %v", res, err)
			}
			if got := read(t, r.Path); got != c.registered {
				t.Errorf("registered:\n%s\nwant\n%s", got, c.registered)
			}
			if res, err := Register(r); err != nil || res != Already {
				t.Errorf("register again: %v %v", res, err)
			}
			if res, err := Unregister(r); err != nil || res != Done {
				t.Fatalf("unregister: %v %v", res, err)
			}
			var back map[string]any
			if err := json.Unmarshal([]byte(read(t, r.Path)), &back); err != nil {
				t.Fatal(err)
			}
			if s, _ := back["mcpServers"].(map[string]any); s["walkie"] != nil {
				t.Errorf("walkie is still registered: %v", back)
			}
			if res, err := Unregister(r); err != nil || res != Absent {
				t.Errorf("unregister again: %v %v", res, err)
			}
		})
	}
}

// What walkie did not write is never replaced or removed, and a file that
// is not what the host reads is refused, not overwritten.
func TestRegisterRefuses(t *testing.T) {
	for _, c := range []struct{ name, host, file, before, err string }{
		{"a person's walkie", "claude", ".claude.json", `{"mcpServers":{"walkie":{"command":"/opt/other","args":[]}}}`, "walkie did not register it"},
		{"not json", "gemini", "settings.json", `{"mcpServers":`, "not a JSON settings file"},
		{"servers not an object", "claude", ".mcp.json", `{"mcpServers":[]}`, "mcpServers is not a JSON object"},
		{"a person's codex table", "codex", "config.toml", "[mcp_servers.walkie]\ncommand = \"mine\"\n", "walkie did not register it"},
		{"not toml", "codex", "config.toml", "model = \n", "not a TOML file Codex reads"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Registration{Host: c.host, Path: filepath.Join(t.TempDir(), c.file)}
			write(t, r.Path, c.before)
			for _, edit := range []func(Registration) (Result, error){Register, Unregister} {
				if _, err := edit(r); err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("err %v, want %q", err, c.err)
				}
			}
			if got := read(t, r.Path); got != c.before {
				t.Errorf("the file changed:\n%s", got)
			}
		})
	}
}

// Codex's config.toml is edited as text: comments and the rest stay byte
// for byte, and removing what was added gives the file back.
func TestRegisterTOML(t *testing.T) {
	before := "# my settings\nmodel = \"gpt-6.2-sol\" # the default\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n\n[profiles.fast]\nmodel = \"mini\"\n"
	r := Registration{Host: "codex", Path: filepath.Join(t.TempDir(), "config.toml")}
	write(t, r.Path, before)
	if res, err := Register(r); err != nil || res != Done {
		t.Fatalf("register: %v %v", res, err)
	}
	want := before + "\n" + tomlComment + "\n[mcp_servers.walkie]\ncommand = \"walkie\"\nargs = [\"mcp\"]\n"
	if got := read(t, r.Path); got != want {
		t.Errorf("registered:\n%s\nwant\n%s", got, want)
	}
	if res, err := Unregister(r); err != nil || res != Done {
		t.Fatalf("unregister: %v %v", res, err)
	}
	if got := read(t, r.Path); got != before {
		t.Errorf("unregistered:\n%q\nwant\n%q", got, before)
	}
	// A table of walkie's in the middle of the file goes with its lines
	// only.
	middle := "a = 1\n\n[mcp_servers.walkie]\ncommand = \"walkie\"\nargs = [\"mcp\"]\n\n[x]\nb = 2\n"
	write(t, r.Path, middle)
	if _, err := Unregister(r); err != nil {
		t.Fatal(err)
	}
	if got := read(t, r.Path); got != "a = 1\n\n[x]\nb = 2\n" {
		t.Errorf("unregistered from the middle: %q", got)
	}
}

// A project's file is written only as a real file; a user's own may be a
// link (dotfiles), and is written where it leads.
func TestRegisterLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.json")
	write(t, target, "{}")
	link := filepath.Join(dir, ".mcp.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	var le *LinkError
	if _, err := Register(Registration{Host: "claude", Path: link, Project: true}); !errors.As(err, &le) {
		t.Fatalf("a project's link: %v", err)
	}
	if got := read(t, target); got != "{}" {
		t.Errorf("the link's target changed: %s", got)
	}
	if _, err := Register(Registration{Host: "claude", Path: link}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the user's link was replaced: %v", err)
	}
	if !strings.Contains(read(t, target), `"walkie"`) {
		t.Errorf("the link's target was not registered in: %s", read(t, target))
	}
}

func FuzzEditJSON(f *testing.F) {
	f.Add([]byte(`{"mcpServers":{"other":{"command":"x"}},"a":1}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"mcpServers":{"walkie":{"command":"walkie","args":["mcp"]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, add := range []bool{true, false} {
			out, res, err := editJSON(data, add)
			if err != nil || res != Done {
				continue
			}
			var v map[string]any
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("edit gave invalid JSON: %v\n%s", err, out)
			}
			s, _ := v["mcpServers"].(map[string]any)
			if (s["walkie"] != nil) != add {
				t.Fatalf("add %v, but mcpServers is %v", add, s)
			}
		}
	})
}

func FuzzEditTOML(f *testing.F) {
	f.Add([]byte("a = 1\n[mcp_servers.walkie]\ncommand = \"walkie\"\nargs = [\"mcp\"]\n[b]\nc = 2\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, add := range []bool{true, false} {
			out, res, err := editTOML(data, add)
			if err != nil || res != Done {
				continue
			}
			servers, err := tomlServers(out)
			if err != nil {
				t.Fatalf("edit gave invalid TOML: %v\n%s", err, out)
			}
			if _, there := servers[ServerName]; there != add {
				t.Fatalf("add %v, but the servers are %v", add, servers)
			}
		}
	})
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
