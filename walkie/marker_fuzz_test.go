package walkie

import (
	"strings"
	"testing"
)

// FuzzCompactMarker: a line either fails to parse as a format-4 marker or
// is exactly the line walkie writes for what it parsed to, so the line
// and its fields are one to one: nothing in it escapes the hash, and no
// two lines read as the same marker.
func FuzzCompactMarker(f *testing.F) {
	for _, s := range []string{
		"<!-- walkie seq=1 at=20261130T020000.000Z h=AAAAAAAAAAAAAAAAAAAAAA -->",
		"<!-- walkie seq=12345 at=20261130T235959.999Z h=_-_-abcdEFGHijklMNOPqg -->",
		"<!-- walkie seq=01 at=20261130T020000.000Z h=AAAAAAAAAAAAAAAAAAAAAA -->",
		"<!-- walkie seq=1 at=20261130T020000Z h=AAAAAAAAAAAAAAAAAAAAAA -->",
		"<!-- walkie seq=1 at=20261130T020000.000Z h=AAAAAAAAAAAAAAAAAAAAAB -->",
		"<!-- walkie at=20261130T020000.000Z seq=1 h=AAAAAAAAAAAAAAAAAAAAAA -->",
		"<!-- walkie seq=1  at=20261130T020000.000Z h=AAAAAAAAAAAAAAAAAAAAAA -->",
		"<!-- walkie seq=1 at=2026-11-30T02:00:00.000Z prev=sha256:00 hash=sha256:11 -->",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		mk, err := parseMarker([]byte(line), FormatCompact)
		if err != nil {
			return
		}
		if got := strings.TrimSuffix(string(compactMarker(mk)), "\n"); got != line {
			t.Fatalf("%q parses to %+v, which walkie writes as %q", line, mk, got)
		}
	})
}

// TestMarkerShapeFollowsFormat: a file's markers are all of the shape
// its format says; the other shape is bad input that says which it is.
func TestMarkerShapeFollowsFormat(t *testing.T) {
	old := "<!-- walkie seq=1 turn=1 agent=a at=2026-11-30T02:00:00.000Z prev=sha256:00 hash=sha256:11 -->"
	compact := "<!-- walkie seq=1 at=20261130T020000.000Z h=AAAAAAAAAAAAAAAAAAAAAA -->"
	for _, c := range []struct {
		line   string
		format int
		want   string
	}{
		{old, FormatCompact, "the whole marker of formats 1 to 3 in a file that says walkie: 4"},
		{compact, FormatTyped, "a compact marker (format 4) in a file that says walkie: 3"},
		{compact, FormatVersion, "a compact marker (format 4) in a file that says walkie: 1"},
		{"<!-- walkie seq=1 at=20261130T020000.000Z h=AAAA -->", FormatCompact, "not 16 bytes of base64url"},
		{"<!-- walkie seq=0 at=20261130T020000.000Z h=AAAAAAAAAAAAAAAAAAAAAA -->", FormatCompact, "not a sequence number"},
		{"<!-- walkie seq=1 turn=1 at=20261130T020000.000Z h=AAAAAAAAAAAAAAAAAAAAAA -->", FormatCompact, "4 fields"},
	} {
		if _, err := parseMarker([]byte(c.line), c.format); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q at format %d: %v, want %q", c.line, c.format, err, c.want)
		}
	}
	for line, format := range map[string]int{old: FormatTyped, compact: FormatCompact} {
		if _, err := parseMarker([]byte(line), format); err != nil {
			t.Errorf("%q at format %d: %v", line, format, err)
		}
	}
}
