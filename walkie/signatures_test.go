package walkie

import (
	"path/filepath"
	"strings"
	"testing"
)

const armored = "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"

var aHash = "sha256:" + strings.Repeat("ab", 32)

// What AppendSignature writes, ReadSignatures reads back; Of picks an
// entry's by seq and hash; a record without a signatures file has none.
func TestSignaturesRoundTrip(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.walkie.md")
	if sigs, err := ReadSignatures(file); err != nil || sigs != nil {
		t.Fatalf("no file: %v, %v", sigs, err)
	}
	for _, s := range []Signature{{Seq: 2, Hash: aHash, Signature: armored}, {Seq: 3, Hash: aHash, Signature: armored}} {
		must(t, AppendSignature(file, s))
	}
	sigs, err := ReadSignatures(file)
	must(t, err)
	e := &Entry{Marker: Marker{Seq: 3, Hash: aHash}}
	if len(sigs) != 2 || len(Of(sigs, e)) != 1 || Of(sigs, e)[0].Seq != 3 {
		t.Fatalf("read %+v", sigs)
	}
	e.Marker.Hash = "sha256:" + strings.Repeat("cd", 32) // another entry at that seq
	if len(Of(sigs, e)) != 0 {
		t.Fatal("a signature of another entry counted")
	}
	if err := AppendSignature(file, Signature{Seq: 1, Hash: "sha256:x", Signature: armored}); err == nil {
		t.Fatal("a bad signature was written")
	}
}

// A line that is not a signature is an error naming the line.
func TestParseSignaturesRefuses(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"seq":1,"hash":"` + aHash + `","signature":"x"}`, ":1: the signature is not an armored SSH signature"},
		{"\n{\"seq\":0}", ":2: seq 0 is no entry's"},
		{`{"seq":1,"hash":"md5:x","signature":"` + strings.ReplaceAll(armored, "\n", `\n`) + `"}`, "is not a chain hash"},
		{`{"seq":1,"extra":true}`, `:1: not a signature: json: unknown field "extra"`},
		{"not json", ":1: not a signature"},
	} {
		if _, err := ParseSignatures("r.sig", []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzParseSignatures(f *testing.F) {
	f.Add([]byte(`{"seq":1,"hash":"` + aHash + `","signature":"` + strings.ReplaceAll(armored, "\n", `\n`) + `"}` + "\n"))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sigs, err := ParseSignatures("f", data)
		if err != nil {
			return
		}
		for _, s := range sigs {
			if s.check() != nil {
				t.Fatalf("accepted %+v", s)
			}
		}
	})
}
