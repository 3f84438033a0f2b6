package session

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// A grant that holds a hidden path is laid out around it: the grant's
// folder may only be listed, every other entry is granted whole, the
// hidden one and links are not, and a grant asked for beneath a hidden
// path stays.
func TestLaidOut(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"notes.md", "src/a.go", ".walkie/d/state.json", ".walkie/d/turns/1.log", "other.walkie.md", "deep/x/hidden/t.py", "deep/x/y.txt", "deep/z.txt"} {
		writeTestFile(t, filepath.Join(root, p), "x")
	}
	if err := os.Symlink("/", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	r := func(p string) string { return filepath.Join(root, p) }
	p := policy{
		grants: []grant{{root, accRead | accExec}, {r(".walkie/d/round-1"), accRead | accWrite}},
		hide:   []string{r(".walkie"), r("other.walkie.md"), r("deep/x/hidden")},
	}
	got := map[string]access{}
	for _, g := range p.laidOut() {
		got[strings.TrimPrefix(strings.TrimPrefix(g.path, root), "/")] = g.acc
	}
	want := map[string]access{
		"":                  accList,
		"notes.md":          accRead | accExec,
		"src":               accRead | accExec,
		"deep":              accList,
		"deep/z.txt":        accRead | accExec,
		"deep/x":            accList,
		"deep/x/y.txt":      accRead | accExec,
		".walkie/d/round-1": accRead | accWrite,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%q: access %b, want %b", k, got[k], w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%q granted (%b), and must not be", k, got[k])
		}
	}
	// A grant of a hidden path itself goes.
	if g := (policy{grants: []grant{{r(".walkie"), accRead}}, hide: p.hide}).laidOut(); len(g) != 0 {
		t.Errorf("a hidden path was granted: %v", g)
	}
}

// The policy a session gets: the user's HOME is kept out of a grant that
// holds it, and a grant of the HOME itself is left out and said so.
func TestNewPolicyKeepsHomeOut(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	writeTestFile(t, filepath.Join(home, ".ssh", "id_ed25519"), "secret")
	writeTestFile(t, filepath.Join(root, "work", "notes.md"), "x")
	spec := Spec{Dir: filepath.Join(root, "work"), Sandbox: Sandbox{Level: SandboxAuto, Reach: Reach{Read: []string{root, home, "notes.md", "missing.md"}}}}
	p := newPolicy(spec, madeDirs{}, "", nil, home)
	var laid []string
	for _, g := range p.laidOut() {
		laid = append(laid, g.path)
	}
	if slices.ContainsFunc(laid, func(s string) bool { return within(s, home) }) {
		t.Errorf("the HOME is reached: %v", laid)
	}
	if !slices.Contains(laid, filepath.Join(root, "work")) || !slices.Contains(laid, filepath.Join(root, "work", "notes.md")) {
		t.Errorf("the work folder is not reached: %v", laid)
	}
	left := strings.Join(p.left, "\n")
	for _, w := range []string{home + ": kept out of reach (your HOME)", "missing.md: not there"} {
		if !strings.Contains(left, w) {
			t.Errorf("left out %q, want it to say %q", left, w)
		}
	}
}

// The Seatbelt profile, rendered for a fixed policy: a golden file, since
// it cannot be run here (go test -run Seatbelt -update rewrites it).
func TestSeatbeltProfile(t *testing.T) {
	p := policy{
		grants: []grant{
			{"/usr", accRead | accExec}, {"/private/etc", accRead}, {"/dev/tty", accRead | accWrite | accDev},
			{"/private/tmp/walkie-home-abc", accRead | accExec | accWrite},
			{"/Users/me/src/api", accRead | accExec}, {"/Users/me/src/api/d.walkie.md", accRead | accWrite},
			{"/Users/me/src/bad\"name", accRead},
		},
		hide: []string{"/Users/me/src/api/.walkie", "/Users/me/src/api/other.walkie.md", "/Users/me"},
	}
	got, left := seatbeltProfile(p)
	if len(left) != 1 || !strings.Contains(left[0], `bad\"name`) {
		t.Errorf("left = %q, want the path with a quote", left)
	}
	golden := filepath.Join("testdata", "seatbelt.sb")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("profile differs from %s (rerun with -update if the change is meant):\n%s", golden, got)
	}
	for _, must := range []string{"(deny default)", `(require-all (subpath "/Users/me/src/api") (require-not (subpath "/Users/me/src/api/.walkie"))`, `(allow file-write*`} {
		if !strings.Contains(got, must) {
			t.Errorf("profile lacks %s", must)
		}
	}
	// The project lies in the HOME: the HOME is hidden from grants that
	// hold it, not from those inside it.
	if strings.Contains(got, `(require-not (subpath "/Users/me"))`) {
		t.Error("the HOME's exception applies to grants inside it")
	}
}

func TestRefusalScanner(t *testing.T) {
	for _, tt := range []struct {
		name, out string
		want      []string
	}{
		{"cat", "cat: /root/.ssh/id_ed25519: Permission denied\n", []string{"/root/.ssh/id_ed25519"}},
		{"go", "open /w/.walkie/d/state.json: permission denied\n", []string{"/w/.walkie/d/state.json"}},
		{"python", "PermissionError: [Errno 13] Permission denied: '/w/hidden/t.py'\n", []string{"/w/hidden/t.py"}},
		{"node", "Error: EACCES: permission denied, open '/w/other.walkie.md'\n", []string{"/w/other.walkie.md"}},
		{"home", "bash: ~/.aws/credentials: Operation not permitted\n", []string{"~/.aws/credentials"}},
		{"no path", "sudo: Operation not permitted\n", []string{"sudo: Operation not permitted"}},
		{"split and repeated", "cat: /a/b: Perm", []string{"/a/b"}},
		{"nothing", "all good\nwrote /tmp/x\n", nil},
		{"json", `{"type":"tool_result","content":"ls: cannot open directory '/w/.walkie': Permission denied","is_error":true}` + "\n", []string{"/w/.walkie"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r refusalScanner
			out := tt.out
			if tt.name == "split and repeated" {
				r.feed([]byte(out))
				r.feed([]byte("ission denied\ncat: /a/b: Permission denied\n"))
			} else {
				for i := 0; i < len(out); i += 7 { // any split of the stream reads the same
					r.feed([]byte(out[i:min(len(out), i+7)]))
				}
			}
			r.close()
			if !slices.Equal(r.found, tt.want) {
				t.Errorf("found %q, want %q", r.found, tt.want)
			}
		})
	}
	var r refusalScanner
	for i := range 2 * maxRefusals {
		r.feed([]byte("cat: /f" + strings.Repeat("x", i) + ": Permission denied\n"))
	}
	if len(r.found) != maxRefusals {
		t.Errorf("%d refusals kept, want at most %d", len(r.found), maxRefusals)
	}
}

func FuzzRefusalScanner(f *testing.F) {
	f.Add([]byte("cat: /root/.ssh/id_ed25519: Permission denied\n"), 3)
	f.Add([]byte("EACCES EPERM\n\n/a: permission denied"), 1)
	f.Fuzz(func(t *testing.T, out []byte, step int) {
		step = max(1, step%64)
		var r refusalScanner
		for i := 0; i < len(out); i += step {
			r.feed(out[i:min(len(out), i+step)])
		}
		r.close()
		if len(r.found) > maxRefusals {
			t.Fatalf("%d refusals", len(r.found))
		}
		for _, s := range r.found {
			if len(s) > maxRefusalLine || s == "" {
				t.Fatalf("entry of %d bytes: %q", len(s), s)
			}
		}
	})
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
