package walkie

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Find follows the directory it is given once, and no link under it: a
// linked walkie file and a linked directory are not walkie files there,
// and the files it returns are named under the real directory.
func TestFindFollowsTheNamedDirectoryOnly(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(real, "sub"), filepath.Join(outside, "tree")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	write := func(p string) string {
		must(t, os.WriteFile(p, []byte("---\n"), 0o644))
		return p
	}
	plain := write(filepath.Join(real, "plain.walkie.md"))
	nested := write(filepath.Join(real, "sub", "nested.walkie.md"))
	elsewhere := write(filepath.Join(outside, "elsewhere.walkie.md"))
	write(filepath.Join(outside, "tree", "deep.walkie.md"))
	must(t, os.Symlink(elsewhere, filepath.Join(real, "linked.walkie.md")))
	must(t, os.Symlink(filepath.Join(outside, "tree"), filepath.Join(real, "tree")))
	link := filepath.Join(root, "served")
	must(t, os.Symlink(real, link))

	// t.TempDir may itself sit under a link (macOS /var -> /private/var).
	realRoot, err := filepath.EvalSymlinks(real)
	must(t, err)
	want := []string{filepath.Join(realRoot, "plain.walkie.md"), filepath.Join(realRoot, "sub", "nested.walkie.md")}
	for _, dir := range []string{real, link} {
		got, err := Find(dir)
		if err != nil {
			t.Fatalf("Find(%s): %v", dir, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Find(%s) = %v, want %v (plain %s, nested %s)", dir, got, want, plain, nested)
		}
	}
}
