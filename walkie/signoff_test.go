package walkie

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/net/html"
)

// How a sign-off is judged (issue 27 item 13): walkie counts the closing
// `Signed-off-by:` line only where a markdown viewer shows it as the
// turn's closing text. Each case is an agent's turn after its heading;
// the judge and walkie post (with the body as given, and with --sign on
// the body without its last line) must agree.
func TestSignOffShown(t *testing.T) {
	const (
		signed   = "signed"
		unsigned = "unsigned"
		hidden   = "hidden"
		shown    = "shown" // a viewer shows a sign-off walkie does not read
		refused  = "refused"
	)
	for _, c := range []struct {
		name, body string
		want       string
		detail     string // in the refusal; %d stands for line at of the body
		at         int
		// post is what walkie post does with the body when it differs
		// from the judge: it writes the sign-off line itself, after a
		// blank line where a block would take it in.
		post string
	}{
		{"plain", "I agree.\n\nSigned-off-by: claude\n", signed, "", 0, ""},
		{"closing a paragraph", "I agree.\nSigned-off-by: claude\n", signed, "", 0, ""},
		{"after a list", "- one\n- two\nSigned-off-by: claude\n", signed, "", 0, ""},
		{"after a quote", "> as codex said\nSigned-off-by: claude\n", signed, "", 0, ""},
		{"after a closed comment", "<!-- a note -->\nSigned-off-by: claude\n", signed, "", 0, ""},
		{"unclosed comment", "I agree.\n<!--\nSigned-off-by: claude\n", hidden, "the HTML comment opened on line %d", 2, hidden},
		{"unclosed comment, blank line", "I agree.\n\n<!--\n\nSigned-off-by: claude\n", hidden, "the HTML comment opened on line %d", 3, hidden},
		{"inline comment left open", "I agree <!--\nSigned-off-by: claude\n", signed, "", 0, ""},
		{"HTML block", "<div>\nSigned-off-by: claude\n", hidden, "the HTML block that starts on line %d", 1, hidden},
		{"after a closed HTML block", "<div>x</div>\nSigned-off-by: claude\n", hidden, "the HTML block that starts on line %d", 1, signed},
		{"details never closed", "<details>\n\nI agree.\n\nSigned-off-by: claude\n", hidden, "raw HTML element <details>", 0, hidden},
		{"tag completed by the renderer's", "<p hidden\n\nSigned-off-by: claude\n", hidden, "markdown viewer does not show", 0, hidden},
		{"inline element left open", "I agree <span hidden>\nSigned-off-by: claude\n", hidden, "raw HTML element <span>", 0, signed},
		{"link reference definition", "[x]:\nSigned-off-by:claude\n", hidden, "a link reference definition", 0, signed},
		{"not a definition", "[x]:\nSigned-off-by: claude\n", signed, "", 0, ""},
		{"indented code", "I agree.\n\n    Signed-off-by: claude\n", unsigned, "", 0, ""},
		{"unclosed fence", "```\nSigned-off-by: claude\n", refused, "code fence that is never closed", 0, ""},
		{"bold", "I agree.\n\n**Signed-off-by: claude**\n", shown, `"Signed-off-by: claude"`, 0, ""},
		{"escaped", "I agree.\n\nSigned\\-off-by: claude\n", shown, `"Signed-off-by: claude"`, 0, ""},
		{"entity", "I agree.\n\n&#83;igned-off-by: claude\n", shown, `"Signed-off-by: claude"`, 0, ""},
		{"in a raw element", "<span>Signed-off-by: claude</span>\n", shown, `"Signed-off-by: claude"`, 0, ""},
		{"only in text", "I would write Signed-off-by: claude later.\n", unsigned, "", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			file, before := oneTurnAs(t, "claude")
			after := append(append(bytes.Clone(before), "\n## Turn 1 · claude\n\n"...), c.body...)
			v, _ := Judge(file, before, after, Expect{Turn: 1, Agent: "claude"})
			detail := c.detail
			if c.at > 0 { // the line in the file: the body starts 3 lines below the record
				detail = fmt.Sprintf(c.detail, bytes.Count(before, []byte("\n"))+3+c.at)
			}
			switch got := judged(v); {
			case got != c.want:
				t.Errorf("judge: %s (%s), want %s", got, v.Detail, c.want)
			case !strings.Contains(v.Detail, detail):
				t.Errorf("judge: %q lacks %q", v.Detail, detail)
			}
			if c.at > 0 {
				detail = fmt.Sprintf(c.detail, c.at)
			}
			// walkie post writes the sign-off line itself: given in the
			// body or by --sign, it is the same line.
			text, name := SplitSignOff([]byte(c.body))
			want := c.want
			if name != "" {
				want = cmpOr(c.post, c.want)
				file, _ := oneTurnAs(t, "claude")
				rc, err := Append(file, Post{From: "claude", Body: text, Sign: true})
				if got := posted(rc, err); got != want || (err != nil && !strings.Contains(err.Error(), detail)) {
					t.Errorf("post --sign: %s (%v), want %s with %q", got, err, want, detail)
				}
			}
			rc, err := Append(file, Post{From: "claude", Body: []byte(c.body)})
			if got := posted(rc, err); got != want || (err != nil && !strings.Contains(err.Error(), detail)) {
				t.Errorf("post: %s (%v), want %s with %q", got, err, want, detail)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// oneTurnAs is a new debate whose first turn is agent's, and its bytes.
func oneTurnAs(t *testing.T, agent string) (string, []byte) {
	t.Helper()
	file := newDebate(t, 6, agent, "codex")
	return file, readFile(t, file)
}

func judged(v Verdict) string {
	switch {
	case v.Outcome == VerdictAccepted && v.Signed:
		return "signed"
	case v.Outcome == VerdictAccepted:
		return "unsigned"
	case strings.Contains(v.Detail, "does not show"):
		return "hidden"
	case strings.Contains(v.Detail, "shows as the sign-off"):
		return "shown"
	case v.Outcome == VerdictMalformed:
		return "refused"
	}
	return string(v.Outcome) + ": " + v.Detail
}

func posted(rc Receipt, err error) string {
	switch {
	case err == nil && rc.Entry.Signed:
		return "signed"
	case err == nil:
		return "unsigned"
	case strings.Contains(err.Error(), "does not show"):
		return "hidden"
	case strings.Contains(err.Error(), "shows as the sign-off"):
		return "shown"
	}
	var re *RefusedError
	if errors.As(err, &re) {
		return "refused"
	}
	return err.Error()
}

// FuzzSignOffShown cross-checks the sign-off rule against a viewer reading
// the whole record: whatever turn the judge accepts, or walkie post
// accepts (signing or not), walkie's parser counts a sign-off exactly when
// the record, rendered with GitHub's flavour (tables, autolinks, raw HTML
// passed on) and built into a page as a browser builds it, ends the
// entry's section with the line `Signed-off-by: claude` as visible text:
// not in a comment, code, or an element that hides its content.
func FuzzSignOffShown(f *testing.F) {
	for _, s := range []string{
		"I agree.\nSigned-off-by: claude\n", "<!--\nSigned-off-by: claude\n", "```\nSigned-off-by: claude\n",
		"<div>\nSigned-off-by: claude\n", "[x]:\nSigned-off-by:claude\n", "    Signed-off-by: claude\n",
		"<details>\n\nSigned-off-by: claude\n", "x <span>\nSigned-off-by: claude\n", "**Signed-off-by: claude**\n",
		"Signed\\-off-by: claude\n", "> q\nSigned-off-by: claude\n", "- a\nSigned-off-by: claude\n",
		"| a |\n|---|\nSigned-off-by: claude\n", "<textarea>\nSigned-off-by: claude\n", "<template>\n\nSigned-off-by: claude\n",
		"<table><tr><td>\n\nSigned-off-by: claude\n", "<p hidden>\nSigned-off-by: claude\n", "~~~\nx\n~~~\nSigned-off-by: claude\n",
	} {
		f.Add([]byte(s))
	}
	base := genRecord(f, 2, "claude", "codex") // turn 3 is claude's
	bd, err := Parse("f.walkie.md", base)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, sign := range []bool{false, true} {
			p := Post{From: "claude", Body: body, Sign: sign}
			if text, err := checkBody(&bd.Meta, &p, ""); err == nil {
				checkSignOffShown(t, "post", stampOn(base, bd, postedText(&p, 3, text)))
			}
		}
		after := append(append(bytes.Clone(base), "\n## Turn 3 · claude\n\n"...), body...)
		if v, d := Judge("f.walkie.md", base, after, Expect{Turn: 3, Agent: "claude"}); v.Outcome == VerdictAccepted {
			checkSignOffShown(t, "turn", stampOn(base, bd, stampedText(d.Tail)))
		}
	})
}

// gfmViewer renders as GitHub does, raw HTML passed on.
var gfmViewer = goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))

// hiding are elements a browser does not show the text of (details shows
// only its summary), or shows as code.
var hiding = map[string]bool{"details": true, "template": true, "script": true, "style": true, "noscript": true, "textarea": true,
	"title": true, "head": true, "iframe": true, "noembed": true, "noframes": true, "xmp": true, "object": true, "select": true,
	"pre": true, "code": true}

// checkSignOffShown fails unless the parser's reading of turn 3's sign-off
// and the viewer's agree.
func checkSignOffShown(t *testing.T, how string, rec []byte) {
	t.Helper()
	d, err := Parse("f.walkie.md", rec)
	if err != nil {
		t.Fatalf("%s: %v", how, err)
	}
	e := d.Entries[2]
	var out bytes.Buffer
	if err := gfmViewer.Convert(rec[bytes.Index(rec, []byte("# Briefing")):], &out); err != nil {
		t.Fatal(err)
	}
	page, err := html.Parse(&out)
	if err != nil {
		t.Fatal(err)
	}
	// The entry's section: from its heading to the note's (the text rules
	// keep every other heading from reading as an entry's).
	var last *html.Node
	in := false
	for n := range page.Descendants() {
		if n.Type == html.ElementNode && n.Data == "h2" && n.FirstChild != nil {
			switch n.FirstChild.Data {
			case "Turn 3 · claude":
				in = true
			case "Supervisor":
				in = false
			}
		}
		if in && n.Type == html.TextNode && strings.TrimSpace(n.Data) != "" && n.Data != "Turn 3 · claude" {
			last = n
		}
	}
	visible := last != nil
	for p := last; visible && p != nil; p = p.Parent {
		if p.Type == html.ElementNode && (hiding[p.Data] || hasAttr(p, "hidden")) {
			visible = false
		}
	}
	var shown string
	if visible {
		lines := strings.Split(strings.TrimSpace(last.Data), "\n")
		shown = strings.Join(strings.Fields(lines[len(lines)-1]), " ")
	}
	viewerSigned := visible && signOffRe.MatchString(shown) && strings.TrimSpace(strings.TrimPrefix(shown, "Signed-off-by:")) == "claude"
	if e.Signed() != viewerSigned {
		t.Fatalf("%s: walkie reads signed=%v, a viewer shows %q (visible %v):\n%s\n--- rendered\n%s", how, e.Signed(), shown, visible, e.Raw, out.String())
	}
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}
