package walkie

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The records committed before format 3 existed, pinned by their bytes:
// each still parses, verifies, and rebuilds every marker line byte for
// byte, so the vocabulary changed no hash of an untyped entry.
var recordsBefore3 = map[string]string{
	"testdata/golden/no-entries.walkie.md":                  "729e471f16b24e4b",
	"testdata/golden/no-final-newline.walkie.md":            "707d78b0ca2152fe",
	"testdata/golden/signed.walkie.md":                      "65e80fe644b847bc",
	"testdata/golden/supervisor.walkie.md":                  "27d039a1b94a5bbc",
	"testdata/golden/turns.walkie.md":                       "75bf57c41b703c8f",
	"testdata/golden/unstamped-tail.walkie.md":              "cbb2c32a8ecac930",
	"../cmd/walkie/term/testdata/show/converged.walkie.md":  "bdf86312fdb8d638",
	"../cmd/walkie/term/testdata/show/max-rounds.walkie.md": "43612c4040be7232",
}

func TestRecordsBeforeFormat3VerifyUnchanged(t *testing.T) {
	for f, digest := range recordsBefore3 {
		b := readFile(t, f)
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:])[:16]; got != digest {
			t.Fatalf("%s is not the record committed before format 3 (sha256 %s…, want %s…): keep it as it was", f, got, digest)
		}
		d, err := Parse(f, b)
		must(t, err)
		var torn *TornTailError
		if err := d.Verify(); err != nil && !errors.As(err, &torn) {
			t.Errorf("%s: %v", f, err)
		}
		for i := range d.Entries {
			e := &d.Entries[i]
			want := strings.TrimSuffix(string(markerLine(e)), "\n")
			if got := markerPrefix(e.Marker) + " hash=" + e.Marker.Hash + " -->"; got != want {
				t.Errorf("%s entry %d: the marker rebuilds as\n%s\nnot\n%s", f, i+1, got, want)
			}
			if !e.Marker.Tags.IsZero() {
				t.Errorf("%s entry %d has tags", f, i+1)
			}
		}
		if d.Meta.Walkie >= FormatTyped {
			t.Errorf("%s says walkie: %d", f, d.Meta.Walkie)
		}
	}
}

// FuzzRef: ParseRef never panics, and a ref it reads writes back as the
// same text, with none of the characters a marker or a trailer splits on.
func FuzzRef(f *testing.F) {
	for _, s := range []string{"abc1234", "main@abc1234", "origin/feature-x@" + shaA, "docs/api.md", "./abc1234", "a@b@abc1234", "x-->", "a b", "ü@abc1234"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		if r.String() != s {
			t.Fatalf("ParseRef(%q) writes back as %q", s, r.String())
		}
		if strings.ContainsAny(s, " ,\t\n\r>") {
			t.Fatalf("ParseRef(%q) took a character a marker splits on", s)
		}
		if r.Path != "" && (strings.HasPrefix(r.Path, "/") || slices.Contains(strings.Split(r.Path, "/"), "..")) {
			t.Fatalf("ParseRef(%q) took a path outside the repository", s)
		}
		if (r.SHA != "") == (r.Path != "") {
			t.Fatalf("ParseRef(%q) = %+v: a ref is a commit or a path", s, r)
		}
	})
}

// FuzzTrailers: reading an entry's trailer lines never panics; tags it
// reads write back (as the writer renders them) to trailer lines that
// read as the same tags, under any text.
func FuzzTrailers(f *testing.F) {
	for _, s := range []string{
		"Looks good.\n\nType: verdict\nVerdict: approve\nRefs: main@abc1234, docs/api.md\nSigned-off-by: b\n",
		"Type: info\n", "x\nrefs: a b c\n", "x\nType: close\n\n\nSigned-off-by: a\n", "Type:\n", "x\n\nVerdict: approve\n",
		"x\r\nType: fix-report\r\nRefs: abc1234\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		tags, first, pr := bodyTags([]byte(body))
		if pr != nil {
			if pr.line < 1 {
				t.Fatalf("a problem at line %d", pr.line)
			}
			return
		}
		if tags.IsZero() != (first == 0) {
			t.Fatalf("tags %+v but the block starts at line %d", tags, first)
		}
		if err := checkTagValues(tags); err != nil {
			t.Fatalf("bodyTags gave tags that do not check: %v", err)
		}
		again, _, pr := bodyTags(append([]byte("Some text.\n\n"), renderTrailers(tags)...))
		if pr != nil || !again.Equal(tags) {
			t.Fatalf("tags %+v render and read back as %+v (%v)", tags, again, pr)
		}
	})
}

// FuzzTypedMarker: a marker line with tag fields either fails to parse or
// rebuilds, from its fields, as a line that parses to the same marker:
// the hash covers exactly what Verify reads.
func FuzzTypedMarker(f *testing.F) {
	for _, s := range []string{
		"<!-- walkie seq=1 turn=1 agent=a at=2026-11-30T02:00:00.000Z type=verdict verdict=approve refs=main@abc1234,docs/x.md prev=sha256:00 hash=sha256:11 -->",
		"<!-- walkie seq=2 agent=supervisor at=2026-11-30T02:00:00.000Z type=ack refs=abc1234 prev=sha256:00 hash=sha256:11 -->",
		"<!-- walkie seq=3 turn=2 agent=b at=2026-11-30T02:00:00.000Z refs=a,a prev=x hash=y -->",
		"<!-- walkie seq=3 turn=2 agent=b at=2026-11-30T02:00:00.000Z type= prev=x hash=y -->",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		mk, err := parseMarker([]byte(line), FormatTyped)
		if err != nil {
			return
		}
		rebuilt := markerPrefix(mk) + " hash=" + mk.Hash + " -->"
		mk2, err := parseMarker([]byte(rebuilt), FormatTyped)
		if err != nil {
			t.Fatalf("%q rebuilds as %q, which does not parse: %v", line, rebuilt, err)
		}
		// Times are written to the millisecond (as for every marker).
		mk.At, mk2.At = mk.At.UTC().Truncate(time.Millisecond), mk2.At.UTC()
		if !reflect.DeepEqual(mk, mk2) {
			t.Fatalf("%q and its rebuilding %q differ:\n%+v\n%+v", line, rebuilt, mk, mk2)
		}
		if err := checkTagValues(mk.Tags); err != nil {
			t.Fatalf("a marker with tags that do not check: %v", err)
		}
		if bytes.ContainsAny([]byte(strings.Join(mk.Tags.RefStrings(), "")), " ,") {
			t.Fatal("a ref with a separator")
		}
	})
}
