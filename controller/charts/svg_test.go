package charts

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
)

// el is an element of a parsed SVG document.
type el struct {
	name  string
	attrs map[string]string
	text  string // its own character data
	kids  []*el
}

// parseSVG reads an SVG document as XML, strictly, and checks that its
// root is an svg element in the SVG namespace.
func parseSVG(t *testing.T, doc []byte) *el {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var stack []*el
	var root *el
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG does not parse as XML: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &el{name: tok.Name.Local, attrs: map[string]string{}}
			if tok.Name.Space != svgNS {
				t.Fatalf("<%s> is in namespace %q, not SVG's", tok.Name.Local, tok.Name.Space)
			}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(stack) == 0 {
				if root != nil {
					t.Fatal("the SVG has two roots")
				}
				root = e
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, e)
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		}
	}
	if root == nil || root.name != "svg" {
		t.Fatalf("the document's root is not <svg>:\n%s", doc)
	}
	return root
}

// all is every element under e (e included) that match says.
func (e *el) all(match func(*el) bool) []*el {
	var out []*el
	if match(e) {
		out = append(out, e)
	}
	for _, k := range e.kids {
		out = append(out, k.all(match)...)
	}
	return out
}

// classed matches elements whose class names include c.
func classed(name, c string) func(*el) bool {
	return func(e *el) bool {
		if name != "" && e.name != name {
			return false
		}
		for _, f := range strings.Fields(e.attrs["class"]) {
			if f == c {
				return true
			}
		}
		return false
	}
}

// title is an element's tooltip.
func (e *el) title() string {
	for _, k := range e.kids {
		if k.name == "title" {
			return k.text
		}
	}
	return ""
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
			FromFile: path, ToFile: "got", Context: 2})
		t.Errorf("%s differs from its golden file:\n%s", name, diff)
	}
}
