package temporal

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Whatever --queue and --agents say, the parsers never panic, and what
// they accept is well formed: a queue override names an agent and a queue,
// and an agent list holds no empty or padded names.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"codex=gpu", "=q", "a=", "a=b=c", "claude,codex", " , ,x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if q, err := ParseQueues([]string{s}); err == nil {
			for agent, queue := range q {
				if agent == "" || queue == "" || strings.Contains(agent, "=") {
					t.Fatalf("ParseQueues(%q) = %v", s, q)
				}
				if AgentQueue(agent, q) != queue {
					t.Fatalf("the override for %q is not used", agent)
				}
			}
		}
		for _, a := range ParseAgents([]string{s}) {
			if a == "" || a != strings.TrimSpace(a) || strings.Contains(a, ",") {
				t.Fatalf("ParseAgents(%q) gave %q", s, a)
			}
		}
	})
}

// Whatever archive comes from the other machine, unpacking it writes
// nothing outside its directory (here, nothing beside it in its parent),
// and a Blob reads any JSON without panicking.
func FuzzUnpack(f *testing.F) {
	for _, h := range []*tar.Header{
		{Name: "a/b", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		{Name: "../x", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "../.."},
		{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755},
	} {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		_ = tw.WriteHeader(h)
		if h.Size > 0 {
			tw.Write([]byte("x"))
		}
		tw.Close()
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		_ = unpack(bytes.NewReader(data), dst, nil)
		if ents, _ := os.ReadDir(parent); len(ents) > 1 {
			t.Fatalf("unpack wrote beside its directory: %v", ents)
		}
		var bl Blob
		_ = json.Unmarshal(data, &bl)
	})
}
