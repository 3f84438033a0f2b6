package review

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseObjections(t *testing.T) {
	cases := []struct {
		name, body string
		want       []string
	}{
		{"plain", "Objection: no size bound (docs/a.md:3)\n", []string{"no size bound (docs/a.md:3)"}},
		{"bullet and bold", "- **Objection:** retries are unbounded\n* __Objection__: two\n", []string{"retries are unbounded", "two"}},
		{"numbered", "1. Objection 2: the TTL is unset\n", []string{"the TTL is unset"}},
		{"any case", "OBJECTION: loud\n", []string{"loud"}},
		{"runs on until a blank line", "Objection: first line\n  and its second\nstill it\n\nNot an objection.\n", []string{"first line and its second still it"}},
		{"ends at the next item", "Objection: one\n- another item\nObjection: two\nSuggestion: not one\nSigned-off-by: x\n", []string{"one", "two"}},
		{"not inside a fence", "```\nObjection: quoted from the document\n```\nObjection: real\n", []string{"real"}},
		{"a longer fence is not closed by a shorter one", "````\n```\nObjection: still quoted\n````\n", nil},
		{"tilde fence", "~~~\nObjection: quoted\n~~~\n", nil},
		{"mid-line is not one", "I have an Objection: to this\nNo objection: here either\n", nil},
		{"empty objection is dropped", "Objection:\n\nObjection:   \n", nil},
		{"CRLF", "Objection: windows\r\n", []string{"windows"}},
		{"suggestion is not one", "Suggestion: name the metric\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := parseObjections([]byte(c.body)); !slices.Equal(got, c.want) {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseObjectionsBounded(t *testing.T) {
	got := parseObjections([]byte("Objection: " + strings.Repeat("é", 2000)))
	if len(got) != 1 || len(got[0]) > maxObjectionBytes || !utf8.ValidString(got[0]) || !strings.HasSuffix(got[0], "…") {
		t.Fatalf("%d objections, first %d bytes", len(got), len(got[0]))
	}
}

func TestCite(t *testing.T) {
	c := newCiter(map[string]int{"docs/design/cache.md": 20, "docs/design/cache.md.bak": 5, "x.md": 3})
	cases := []struct {
		text          string
		file          string
		line, endLine int
	}{
		{"bad (docs/design/cache.md:8)", "docs/design/cache.md", 8, 0},
		{"`docs/design/cache.md:8-12` is wrong", "docs/design/cache.md", 8, 12},
		{"docs/design/cache.md:8 – 12", "docs/design/cache.md", 8, 12},
		{"see docs/design/cache.md#L4-L6", "docs/design/cache.md", 4, 6},
		{"see docs/design/cache.md#L4", "docs/design/cache.md", 4, 0},
		{"past the end docs/design/cache.md:21, then docs/design/cache.md:2", "docs/design/cache.md", 2, 0},
		{"a range past the end docs/design/cache.md:19-40", "docs/design/cache.md", 19, 0},
		{"a backward range docs/design/cache.md:9-3", "docs/design/cache.md", 9, 0},
		{"line zero docs/design/cache.md:0", "", 0, 0},
		{"the longer path wins docs/design/cache.md.bak:5", "docs/design/cache.md.bak", 5, 0},
		{"a path that only ends like one: mydocs/design/cache.md:3", "", 0, 0},
		{"another file: other.md:3", "", 0, 0},
		{"x.md:3", "x.md", 3, 0},
		{"no citation at all", "", 0, 0},
	}
	for _, tc := range cases {
		o := Objection{Text: tc.text}
		c.cite(&o)
		if o.File != tc.file || o.Line != tc.line || o.EndLine != tc.endLine {
			t.Errorf("%q: got %s:%d-%d, want %s:%d-%d", tc.text, o.File, o.Line, o.EndLine, tc.file, tc.line, tc.endLine)
		}
	}
	none := newCiter(nil)
	o := Objection{Text: "docs/a.md:1"}
	none.cite(&o)
	if o.Line != 0 {
		t.Error("a citer of no documents cited a line")
	}
}

// FuzzObjections: any turn body parses without a panic into objections
// that are non-empty, bounded, valid UTF-8 when the body is, and whose
// citation (if any) is a line the document has.
func FuzzObjections(f *testing.F) {
	f.Add("Objection: a (docs/a.md:3)\n- **Objection:** b docs/a.md#L2-L9\n```\nObjection: c\n```\n")
	f.Add("Objection:\n\n1. Objection 3: x\n  y\n~~~~\n")
	f.Add("objection:docs/a.md:999999999")
	c := newCiter(map[string]int{"docs/a.md": 10})
	f.Fuzz(func(t *testing.T, body string) {
		for _, text := range parseObjections([]byte(body)) {
			if strings.TrimSpace(text) == "" || len(text) > maxObjectionBytes {
				t.Fatalf("objection %q", text)
			}
			if utf8.ValidString(body) && !utf8.ValidString(text) {
				t.Fatalf("not UTF-8: %q", text)
			}
			o := Objection{Text: text}
			c.cite(&o)
			if o.Line != 0 && (o.File != "docs/a.md" || o.Line > 10 || o.EndLine != 0 && (o.EndLine < o.Line || o.EndLine > 10)) {
				t.Fatalf("citation %s:%d-%d from %q", o.File, o.Line, o.EndLine, text)
			}
		}
	})
}
