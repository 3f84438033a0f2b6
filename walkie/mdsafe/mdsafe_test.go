package mdsafe

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gmtext "github.com/yuin/goldmark/text"
)

// The attacks of issue 27 item 3 and their like: what a file name, a
// reason or an agent's text could try.
var attacks = []string{
	"docs/x`\n## walkie review: ✅ agreed\n@org/team <img src=x onerror=alert(1)> <!-- [x](javascript:alert(1)) | y.md",
	"## walkie review: ✅ agreed", "Turn 3\n===", "- item", "+ item", "1. one", "12) twelve", "> quote", "    indented",
	"<!--", "<script>alert(1)</script>", "<details><summary>x</summary>", "&lt;b&gt; &#64;team &copy;",
	"[x](javascript:alert(1))", "![img](https://evil/x.png)", "[x]: https://evil", "[^1]", "<https://evil>",
	"https://evil.example/x", "www.evil.example", "WWW.Evil.example", "mail me at a@b.example", "@everyone", "#12 and o/r#3",
	"| a | b |", "|---|", "---", "***", "___", "= = =", "`code`", "``a`b``", "```", "~~~", "~~gone~~",
	"**bold** _em_ *em*", "snake_case_name __init__", "$x^2$", "\\", "a\\", "trailing \\\n", "[ ] task", "<b>bold</b>",
	"x\r\ny\rz\u2028w\u0085v", "nul\x00 esc\x1b[2J bell\x07", "\u202egnp.exe", "caf\xe9", "", "  ", ":+1:", "<",
}

var (
	commonMark = goldmark.New()
	gfm        = goldmark.New(goldmark.WithExtensions(extension.GFM))
)

// contexts are the places walkie review puts a Text: %s is the text, and
// want is the kind of the node that must hold it as its only text.
var contexts = []struct {
	name, md string
	holder   ast.NodeKind
}{
	{"paragraph", "%s\n", ast.KindParagraph},
	{"mid-line", "Reviewed %s, merge base.\n", ast.KindParagraph},
	{"heading", "### %s: agreed\n", ast.KindHeading},
	{"table cell", "| a | b |\n|---|---|\n| %s | z |\n", east.KindTableCell},
	{"link text", "1. **codex** on [%s](https://github.com/o/r/blob/x/y#L1):\n", ast.KindLink},
	{"quote", "> [!WARNING]\n> %s\n", ast.KindParagraph},
}

// Text renders as one plain inline, in every place it is used, under
// CommonMark and GFM: no node of markup, and the text as given.
func TestText(t *testing.T) {
	for _, s := range attacks {
		checkText(t, s)
	}
	for in, want := range map[string]string{
		"docs/design/cache.md":     "docs/design/cache.md",
		"docs/api_design_v2.md":    "docs/api_design_v2.md",
		"_x_ a_ b":                 "\\_x\\_ a\\_ b",
		"## walkie review: ✅":      "\\#\u2060\\#\u2060 walkie review: ✅",
		"@org/team":                "@\u2060org/team",
		"<img src=x>":              "\\<img src=x\\>",
		"- a\n1. b":                "\\- a 1. b",
		"1. b":                     "1\\. b",
		"https://x":                "https:\u2060//x",
		"www.x":                    "www\u2060.x",
		"a `b` | c":                "a \\`b\\` \\| c",
		"nul\x00":                  "nul\uFFFD",
		"\u202eabc":                "\uFFFDabc",
		"  many \t\n spaces  ":     "many spaces",
		"[x](javascript:alert(1))": "\\[x\\](javascript:alert(1))",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, s := range attacks {
		f.Add(s)
	}
	f.Fuzz(checkText)
}

// checkText fails unless Text(s) is plain text in every context.
func checkText(t *testing.T, s string) {
	want := strings.ReplaceAll(fold(s), string(joiner), "")
	for _, c := range contexts {
		src := []byte(strings.Replace(c.md, "%s", Text(s), 1))
		for name, md := range map[string]goldmark.Markdown{"CommonMark": commonMark, "GFM": gfm} {
			if c.holder == east.KindTableCell && name == "CommonMark" {
				continue // tables are GFM's
			}
			doc := md.Parser().Parse(gmtext.NewReader(src))
			var holders []ast.Node
			_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
				if entering && n.Kind() == c.holder {
					holders = append(holders, n)
				}
				return ast.WalkContinue, nil
			})
			if want == "" {
				continue // nothing to show; the context's own text stands
			}
			found := false
			for _, h := range holders {
				got, plain := inlineText(md, src, h)
				if !plain {
					t.Fatalf("%s, %s: %q holds markup:\n%s", name, c.name, s, src)
				}
				found = found || strings.Contains(strings.ReplaceAll(got, string(joiner), ""), want)
			}
			if !found {
				t.Fatalf("%s, %s: %q does not show as %q:\n%s", name, c.name, s, want, src)
			}
			checkRendered(t, name+", "+c.name, md, src)
		}
	}
}

// inlineText is what a node shows, rendered, and whether its inline
// children are all plain text.
func inlineText(md goldmark.Markdown, src []byte, n ast.Node) (string, bool) {
	plain := true
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c.(type) {
		case *ast.Text, *ast.String:
		default:
			plain = false
		}
	}
	var out bytes.Buffer
	if err := md.Renderer().Render(&out, src, n); err != nil {
		return "", false
	}
	return html.UnescapeString(tagRe.ReplaceAllString(out.String(), "")), plain
}

var (
	tagRe    = regexp.MustCompile(`<[^>]*>`)
	linkLike = regexp.MustCompile(`(?i)@[a-z0-9_-]|#[0-9a-z]|://|www\.`)
)

// checkRendered fails when the page GitHub would build from src links a
// mention, a reference or an address the text brought.
func checkRendered(t *testing.T, what string, md goldmark.Markdown, src []byte) {
	var out bytes.Buffer
	if err := md.Convert(src, &out); err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(tagRe.ReplaceAllString(strings.ReplaceAll(out.String(), "https://github.com/o/r/blob/x/y#L1", ""), ""))
	if m := linkLike.FindString(text); m != "" {
		t.Fatalf("%s: the page shows %q, which GitHub links:\n%s\n%s", what, m, src, out.String())
	}
}

// A quote is one block quote of plain paragraphs, line for line.
func TestQuote(t *testing.T) {
	for _, s := range append(attacks, "one\ntwo\n\n\nthree\n", "\n\nlate start", "a\\\nb", "> nested\n>> deeper", "x\n---", "x\n===") {
		checkQuote(t, s)
	}
	if got, want := Quote("a\n\n\nb\nc\n\n"), "> a\n>\n> b  \n> c\n"; got != want {
		t.Errorf("Quote = %q, want %q", got, want)
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range attacks {
		f.Add(s)
	}
	f.Fuzz(checkQuote)
}

func checkQuote(t *testing.T, s string) {
	q := Quote(s)
	var want []string
	for l := range strings.SplitSeq(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s), "\n") {
		if f := strings.ReplaceAll(fold(l), string(joiner), ""); f != "" {
			want = append(want, f)
		}
	}
	if len(want) == 0 {
		if q != "" {
			t.Fatalf("Quote(%q) = %q, want nothing", s, q)
		}
		return
	}
	for name, md := range map[string]goldmark.Markdown{"CommonMark": commonMark, "GFM": gfm} {
		src := []byte("Before.\n\n" + q + "\nAfter.\n")
		doc := md.Parser().Parse(gmtext.NewReader(src))
		kids := []ast.NodeKind{}
		for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
			kids = append(kids, n.Kind())
		}
		if len(kids) != 3 || kids[1] != ast.KindBlockquote {
			t.Fatalf("%s: Quote(%q) is not one block quote between two paragraphs: %v\n%s", name, s, kids, src)
		}
		var got []string
		for p := doc.FirstChild().NextSibling().FirstChild(); p != nil; p = p.NextSibling() {
			text, plain := inlineText(md, src, p)
			if p.Kind() != ast.KindParagraph || !plain {
				t.Fatalf("%s: Quote(%q) holds %s with markup:\n%s", name, s, p.Kind(), src)
			}
			for l := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
				got = append(got, strings.ReplaceAll(l, string(joiner), ""))
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: Quote(%q) shows\n%q\nwant\n%q", name, s, got, want)
		}
		checkRendered(t, name+", quote", md, src)
	}
}

// A fenced block holds its text whole: nothing in it closes the fence.
func TestFenced(t *testing.T) {
	for _, s := range append(attacks, "```\n````\n", "~~~\n```` x\n", "line\n```") {
		src := []byte(Fenced("text", s) + "\nAfter.\n")
		for name, md := range map[string]goldmark.Markdown{"CommonMark": commonMark, "GFM": gfm} {
			doc := md.Parser().Parse(gmtext.NewReader(src))
			if k := doc.FirstChild().Kind(); k != ast.KindFencedCodeBlock || doc.ChildCount() != 2 {
				t.Fatalf("%s: Fenced(%q) is not one code block and the paragraph after:\n%s", name, s, src)
			}
		}
	}
}
