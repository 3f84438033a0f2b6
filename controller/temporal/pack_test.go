package temporal

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/controller/tree"
)

// A packed directory unpacks as it was: files with their modes, links,
// empty directories.
func TestPackUnpackKeepsADirectory(t *testing.T) {
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a.txt": "a", "bin/run.sh": "#!/bin/sh\n", "deep/er/c": "c"})
	must(t, os.Chmod(filepath.Join(src, "bin/run.sh"), 0o755))
	must(t, os.Symlink("a.txt", filepath.Join(src, "link")))
	must(t, os.Mkdir(filepath.Join(src, "empty"), 0o755))
	files, err := packDir(src)
	must(t, err)
	var b bytes.Buffer
	must(t, pack(&b, files))
	dst := filepath.Join(t.TempDir(), "out")
	must(t, unpack(&b, dst, nil))
	want, _ := tree.ScanAll(src)
	got, _ := tree.ScanAll(dst)
	if want.Hash() != got.Hash() {
		t.Fatalf("unpacked differently: %v", tree.Diff(want, got))
	}
	if fi, err := os.Stat(filepath.Join(dst, "empty")); err != nil || !fi.IsDir() {
		t.Fatalf("the empty directory did not travel: %v", err)
	}
}

// What comes from the other machine may be an agent's work: no entry is
// written outside the directory, or through a link in it.
func TestUnpackStaysInside(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct {
		name  string
		setup func(dst string)
		entry *tar.Header
	}{
		{"a parent path", nil, &tar.Header{Name: "../escape", Typeflag: tar.TypeReg}},
		{"an absolute path", nil, &tar.Header{Name: filepath.Join(outside, "abs"), Typeflag: tar.TypeReg}},
		{"through a link", func(dst string) { must(t, os.Symlink(outside, filepath.Join(dst, "out"))) }, &tar.Header{Name: "out/through", Typeflag: tar.TypeReg}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := t.TempDir()
			if tc.setup != nil {
				tc.setup(dst)
			}
			var b bytes.Buffer
			tw := tar.NewWriter(&b)
			tc.entry.Size, tc.entry.Mode = 1, 0o644
			must(t, tw.WriteHeader(tc.entry))
			tw.Write([]byte("x"))
			tw.Close()
			if err := unpack(&b, dst, nil); err == nil {
				t.Fatal("unpacked")
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("written outside: %v", ents)
			}
		})
	}
}

// A file the agent turned into a link (or back) is replaced, never
// written through.
func TestUnpackReplacesWhatStandsThere(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "target")
	must(t, os.WriteFile(outside, []byte("keep me"), 0o644))
	dst := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(dst, "f")))
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	must(t, tw.WriteHeader(&tar.Header{Name: "f", Typeflag: tar.TypeReg, Size: 3, Mode: 0o600}))
	tw.Write([]byte("new"))
	tw.Close()
	must(t, unpack(&b, dst, nil))
	if got, _ := os.ReadFile(outside); string(got) != "keep me" {
		t.Fatalf("written through the link: %q", got)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "f")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("f is %v (%v), want a regular file of mode 0600", fi.Mode(), err)
	}
}

// A Blob reads what a field of its place held in protocol 1 (bytes, as
// base64), so histories recorded then replay; and its own form.
func TestBlobReadsProtocolOnesBytes(t *testing.T) {
	var b Blob
	must(t, json.Unmarshal([]byte(`"aGVsbG8="`), &b))
	if string(b.Data) != "hello" || b.Ref != nil {
		t.Fatalf("read %+v", b)
	}
	out, _ := json.Marshal(Blob{Data: []byte("x")})
	var again Blob
	must(t, json.Unmarshal(out, &again))
	if string(again.Data) != "x" || !strings.Contains(string(out), `"Data"`) {
		t.Fatalf("round trip %s → %+v", out, again)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
