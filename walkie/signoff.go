package walkie

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/net/html"
)

// A sign-off is the last non-blank line of a turn's body, written
// `Signed-off-by: NAME` (docs/format.md, "Sign-off"). walkie's parser
// reads it from that line alone, cheaply, on every load; what makes the
// line's reading safe is that walkie post and the judge accept a body
// only when a markdown viewer shows the same: the line as the closing
// text of the turn, not hidden in an HTML comment or block, a code block,
// a link reference definition or a raw HTML element, and no other
// closing text that shows as a sign-off where the line is not one.

// signOffRe is a sign-off line, and also a sign-off as a viewer shows it
// (its last line of text, white space collapsed).
var signOffRe = regexp.MustCompile(`^Signed-off-by:\s*(\S+)\s*$`)

// signOffName is the name a sign-off line gives (without its newline; a
// trailing carriage return is allowed), or "" when line is not one.
func signOffName(line []byte) string {
	if m := signOffRe.FindSubmatch(bytes.TrimSuffix(line, []byte("\r"))); m != nil {
		return string(m[1])
	}
	return ""
}

// SplitSignOff cuts an entry's body at its sign-off: text is the body
// before the closing `Signed-off-by: NAME` line (through the newline
// ending the line before it), name is NAME. A body without one comes back
// whole, with name "". Every reader of a body that shows or reads its
// text apart from the sign-off cuts it here.
func SplitSignOff(body []byte) (text []byte, name string) {
	t := bytes.TrimRight(body, "\r\n \t")
	start := bytes.LastIndexByte(t, '\n') + 1
	if name = signOffName(t[start:]); name == "" {
		return body, ""
	}
	return body[:start], name
}

// shownEnd is how a markdown viewer shows the end of a body.
type shownEnd struct {
	line  string // the last line of text it shows, white space collapsed
	name  string // the name when line reads as a sign-off (outside code)
	plain bool   // line is plain text: no raw HTML element holds it
	inner string // else the raw HTML element that holds it
}

// plainParents are the elements CommonMark puts around a paragraph's
// text in the blocks a sign-off may close: the document, a list, a block
// quote. Anything else around the last text came from raw HTML.
var plainParents = []string{"html", "body", "p", "ul", "ol", "li", "blockquote"}

// plainParent reports whether n is one of plainParents as the renderer
// writes it: without attributes but an ordered list's start. Raw HTML
// can leave a tag open that the renderer's own tag then completes
// ("<p hidden" on a line, then a paragraph), so the name alone does not
// tell.
func plainParent(n *html.Node) bool {
	if !slices.Contains(plainParents, n.Data) {
		return false
	}
	for _, a := range n.Attr {
		if n.Data != "ol" || a.Key != "start" {
			return false
		}
	}
	return true
}

// unsafeRenderer renders raw HTML as written, as the viewers the rule
// stands for (GitHub among them) pass it on to a browser.
var unsafeRenderer = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
})

// checkSignOff applies the sign-off rule to the text of a turn (after its
// heading, through its last line, as it will stand in the record). It
// returns nil when walkie's reading of the closing line and a viewer's
// agree: both see the author's sign-off, or neither sees one.
func checkSignOff(text []byte) *textProblem {
	lines := bytes.Split(text, []byte("\n"))
	last := len(lines) - 1
	for last >= 0 && isBlank(lines[last]) {
		last--
	}
	if last < 0 {
		return nil
	}
	name := signOffName(lines[last])
	src, end, doc := parseProbed(text)
	shown := showEnd(src, end, doc)
	switch {
	case name == "" && shown.name == "":
		return nil
	case name == "":
		return &textProblem{kind: probShownSignOff, line: last + 1, text: shown.line}
	}
	start := 0
	for _, l := range lines[:last] {
		start += len(l) + 1
	}
	pr := &textProblem{kind: probHiddenSignOff, line: last + 1}
	pr.text, pr.from = holder(src, doc, start)
	switch {
	case pr.text == "" && !shown.plain:
		pr.text = fmt.Sprintf("the raw HTML element <%s> opened before it", shown.inner)
	case pr.text == "" && shown.name != name:
		pr.text = "text that a viewer ends otherwise"
	case pr.text == "":
		return nil
	}
	return pr
}

// holder names the block, other than a paragraph, that holds the line
// starting at off, as a sign-off's refusal says, and the line where the
// block starts when the name should give it; "" for a paragraph.
func holder(src []byte, doc ast.Node, off int) (where string, from int) {
	where = "a link reference definition, which a viewer does not show"
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || n.Type() != ast.TypeBlock {
			return ast.WalkContinue, nil
		}
		start, stop := span(n.Lines())
		if h, ok := n.(*ast.HTMLBlock); ok && h.HasClosure() {
			stop = max(stop, h.ClosureLine.Stop)
		}
		if n.Lines().Len() == 0 || off < start || off >= stop {
			return ast.WalkContinue, nil
		}
		from = bytes.Count(src[:start], []byte("\n")) + 1
		switch n := n.(type) {
		case *ast.Paragraph, *ast.TextBlock:
			where, from = "", 0
		case *ast.HTMLBlock:
			where = "the HTML block that starts on line %d"
			if n.HTMLBlockType == ast.HTMLBlockType2 {
				where = "the HTML comment opened on line %d"
			}
		case *ast.LinkReferenceDefinition:
			where, from = "a link reference definition, which a viewer does not show", 0
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			where, from = "a code block", 0
		default:
			where, from = "a "+strings.ToLower(n.Kind().String()), 0
		}
		return ast.WalkStop, nil
	})
	return where, from
}

// showEnd renders the blocks of src before end (the text, without the
// probe) as a viewer does, raw HTML included, and reads the last text
// the resulting page holds as a browser builds it.
func showEnd(src []byte, end int, doc ast.Node) shownEnd {
	var b bytes.Buffer
	r := unsafeRenderer().Renderer()
	for n := doc.FirstChild(); n != nil && n.Pos() < end; n = n.NextSibling() {
		if err := r.Render(&b, src, n); err != nil {
			return shownEnd{}
		}
	}
	page, err := html.Parse(&b)
	if err != nil {
		return shownEnd{}
	}
	var last *html.Node
	for n := range page.Descendants() {
		if n.Type == html.TextNode && strings.TrimSpace(n.Data) != "" {
			last = n
		}
	}
	if last == nil {
		return shownEnd{}
	}
	s := shownEnd{plain: true}
	lines := strings.Split(strings.TrimSpace(last.Data), "\n")
	s.line = strings.Join(strings.Fields(lines[len(lines)-1]), " ")
	code := false
	for p := last.Parent; p != nil; p = p.Parent {
		if p.Type != html.ElementNode {
			continue
		}
		code = code || p.Data == "pre" || p.Data == "code"
		if !plainParent(p) && s.plain {
			s.plain, s.inner = false, p.Data
		}
	}
	if m := signOffRe.FindStringSubmatch(s.line); m != nil && !code {
		s.name = m[1]
	}
	return s
}
