package walkie

import (
	"bytes"
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzParse: the parser never panics; whatever it accepts renders back
// to the same bytes and parses again to the same document; and verifying
// or reading progress from an accepted document never panics either.
// Seeds: testdata/fuzz/FuzzParse (real files) and the golden inputs.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"turns", "supervisor", "signed", "unstamped-tail", "no-final-newline", "no-entries"} {
		b, err := readGolden(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(goodHeader))
	// A compact record (format 4), whose markers Parse links into the chain.
	f.Add(genRecordAt(f, FormatCompact, 6, "claude", "codex"))
	f.Add([]byte(rtHeader(2, "phases:\n  - research: gemini\n  - {plan: claude}\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("f.walkie.md", data)
		if err != nil {
			if d != nil {
				t.Fatal("a doc and an error")
			}
			return
		}
		out := d.Render()
		if !bytes.Equal(out, data) {
			t.Fatalf("render differs from the input:\n%q\n%q", data, out)
		}
		d2, err := Parse("f.walkie.md", out)
		if err != nil {
			t.Fatalf("the rendering does not parse: %v", err)
		}
		if !reflect.DeepEqual(d, d2) {
			t.Fatalf("parse(render(x)) differs from parse(x):\n%+v\n%+v", d, d2)
		}
		_ = d.Verify()
		_ = d.Progress()
		for i := range d.Entries {
			_ = d.Entries[i].Brief()
		}
	})
}

func readGolden(name string) ([]byte, error) {
	return readFileErr("testdata/golden/" + name + ".walkie.md")
}

// FuzzIsMarker: the fast marker test agrees with the pattern it replaces.
func FuzzIsMarker(f *testing.F) {
	f.Add([]byte("<!-- walkie seq=1 agent=a at=x prev=y hash=z -->"))
	f.Add([]byte("<!-- walkie -->"))
	f.Add([]byte("<!-- walkie  -->"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if isMarker(b) != markerRe.Match(b) && utf8.Valid(b) {
			t.Fatalf("isMarker(%q) = %v, markerRe says %v", b, isMarker(b), markerRe.Match(b))
		}
	})
}
