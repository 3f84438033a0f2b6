package reviewtest

import (
	"bytes"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	gmtext "github.com/yuin/goldmark/text"
)

// gfm reads a report as GitHub does: GFM, raw HTML passed on.
var gfm = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))

var (
	// ownHTML is the raw HTML a report may hold: the comment's marker,
	// its line naming the verdict it shows, and the <details> sections
	// walkie writes.
	ownHTML        = regexp.MustCompile(`^(?:<!-- walkie-review -->|` + ownVerdictLine + `|<details><summary>[A-Za-z' ()0-9]+</summary>|</details>)$`)
	ownComments    = regexp.MustCompile(`<!-- walkie-review -->|` + ownVerdictLine)
	ownVerdictLine = `<!-- walkie-review:verdict (?:agreed|disagreed) [0-9a-f]{7,64} [0-9]{1,6} -->`
	tagRe          = regexp.MustCompile(`<(/?)([a-zA-Z0-9]+)([^>]*)>`)
	attrRe         = regexp.MustCompile(`([a-zA-Z-]+)="([^"]*)"`)
	codeRe         = regexp.MustCompile(`(?s)<pre>.*?</pre>|<code>.*?</code>`)
	// pageTags are the elements the markdown of a report renders to.
	pageTags = []string{"p", "h2", "h3", "strong", "a", "table", "thead", "tbody", "tr", "th", "td", "ol", "ul", "li",
		"blockquote", "pre", "code", "details", "summary", "br"}
	// linked is text GitHub links after rendering: a mention, an issue
	// reference, a bare address.
	linked = regexp.MustCompile(`(?i)@[a-z0-9_-]|#[0-9]|://|www\.`)
)

// CheckMarkdown fails the test unless md, a report as the comment or the
// step summary holds it, renders on GitHub with exactly the headings
// given (their text as shown) and nothing outside walkie's own layout: no
// raw HTML but walkie's, no image, no link but to a line under
// linkPrefix, no text GitHub would link as a mention, a reference or an
// address, and every table row with the parties table's six cells.
func CheckMarkdown(t testing.TB, md string, headings []string, linkPrefix string) {
	t.Helper()
	src := []byte(md)
	doc := gfm.Parser().Parse(gmtext.NewReader(src))
	var got []string
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			got = append(got, shown(src, n))
		case *ast.HTMLBlock:
			var b bytes.Buffer
			b.Write(n.Lines().Value(src))
			if s := strings.TrimSpace(b.String()); !ownHTML.MatchString(s) {
				t.Errorf("raw HTML that walkie did not write: %q", s)
			}
		case *ast.RawHTML:
			t.Errorf("inline raw HTML: %q", n.Segments.Value(src))
		case *ast.Image, *ast.AutoLink:
			t.Errorf("a %s: %q", n.Kind(), shown(src, n))
		case *ast.Link:
			if !strings.HasPrefix(string(n.Destination), linkPrefix) || linkPrefix == "" {
				t.Errorf("a link to %q", n.Destination)
			}
		case *east.TableRow, *east.TableHeader:
			if n.ChildCount() != 6 {
				t.Errorf("a table row of %d cells: %q", n.ChildCount(), shown(src, n))
			}
		}
		return ast.WalkContinue, nil
	})
	if !slices.Equal(got, headings) {
		t.Errorf("headings %q, want %q", got, headings)
	}
	var page bytes.Buffer
	if err := gfm.Convert(src, &page); err != nil {
		t.Fatal(err)
	}
	for _, m := range tagRe.FindAllStringSubmatch(page.String(), -1) {
		if !slices.Contains(pageTags, strings.ToLower(m[2])) {
			t.Errorf("the page holds <%s%s>", m[2], m[3])
		}
		for _, a := range attrRe.FindAllStringSubmatch(m[3], -1) {
			if ok := (m[2] == "a" && a[1] == "href") || (m[2] == "code" && a[1] == "class") || (m[2] == "ol" && a[1] == "start"); !ok {
				t.Errorf("the page holds <%s %s=%q>", m[2], a[1], a[2])
			}
		}
	}
	// GitHub links nothing in code.
	text := html.UnescapeString(tagRe.ReplaceAllString(codeRe.ReplaceAllString(page.String(), ""), ""))
	for _, l := range strings.Split(text, "\n") {
		if m := linked.FindString(l); m != "" {
			t.Errorf("GitHub would link %q in %q", m, l)
		}
	}
	if strings.Count(page.String(), "<!--") != len(ownComments.FindAllString(page.String(), -1)) {
		t.Errorf("the page holds an HTML comment walkie did not write")
	}
}

// shown is a node's text as the page shows it.
func shown(src []byte, n ast.Node) string {
	var b bytes.Buffer
	if err := gfm.Renderer().Render(&b, src, n); err != nil {
		return ""
	}
	s := html.UnescapeString(tagRe.ReplaceAllString(b.String(), ""))
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\u2060", "")), " ")
}
