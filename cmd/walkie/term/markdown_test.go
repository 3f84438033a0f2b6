package term

import (
	"regexp"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Each element as a reader sees it in a pipe, at 40 columns.
func TestRenderMarkdownPlain(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"atx heading", "# Title\n\n### Third", "# Title\n\n### Third"},
		{"setext heading", "Title\n=====\n\nSub\n---", "# Title\n\n## Sub"},
		{"heading wraps under its text", "## a heading long enough to need two lines here",
			"## a heading long enough to need two\n   lines here"},
		{"paragraph wraps at the width", "one two three four five six seven eight nine ten eleven twelve",
			"one two three four five six seven eight\nnine ten eleven twelve"},
		{"soft breaks are spaces", "one\ntwo\nthree", "one two three"},
		{"hard break", "one  \ntwo\\\nthree", "one\ntwo\nthree"},
		{"emphasis, strong, code, strike", "a *b* __c__ `d e` ~~f~~", "a *b* **c** `d e` ~~f~~"},
		{"code span with a backtick", "`` a`b ``", "`a`b`"},
		{"escapes and entities", `\*not\* &amp; &copy; &#65;`, "*not* & © A"},
		{"bullets", "- one\n- two\n  - nested\n- three", "• one\n• two\n  • nested\n• three"},
		{"loose list", "- one\n\n- two", "• one\n\n• two"},
		{"continuation lines indent under the text", "- one two three four five six seven eight nine ten",
			"• one two three four five six seven\n  eight nine ten"},
		{"ordered from its start, numbers aligned", "9. nine\n10. ten", " 9. nine\n10. ten"},
		{"ordered with parenthesis", "1) a\n2) b", "1) a\n2) b"},
		{"item with two paragraphs", "1. first\n\n   more of it\n2. second", "1. first\n\n   more of it\n\n2. second"},
		{"fenced code, not wrapped", "```go\nfunc f() { return 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 }\n\tx\n```",
			"  func f() { return 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 }\n      x"},
		{"indented code", "text\n\n    a := 1\n    b := 2", "text\n\n  a := 1\n  b := 2"},
		{"block quote", "> quoted *text*\n>\n> more", "│ quoted *text*\n│\n│ more"},
		{"nested quote", "> > deep", "│ │ deep"},
		{"link with its URL", "see [the docs](https://x.dev/docs)", "see the docs (https://x.dev/docs)"},
		{"link whose text is its URL", "[https://x.dev](https://x.dev)", "https://x.dev"},
		{"autolink", "<https://x.dev/a>", "https://x.dev/a"},
		{"mail autolink as written", "<ada@x.dev>", "ada@x.dev"},
		{"image", "![a chart](c.png)", "[image: a chart (c.png)]"},
		{"thematic break", "a\n\n---\n\nb", "a\n\n" + strings.Repeat("─", 40) + "\n\nb"},
		{"table aligned", "| a | bb | c |\n|:--|:-:|--:|\n| long | x | 1 |\n| y | z | 22 |",
			"a    │ bb │  c\n─────┼────┼───\nlong │ x  │  1\ny    │ z  │ 22"},
		{"table too wide", "| name | says |\n|---|---|\n| ada | the cursor must be opaque to every client |\n| brook | agreed |",
			"name: ada\nsays: the cursor must be opaque to\n  every client\n\nname: brook\nsays: agreed"},
		{"inline html is its text", "a <b>bold</b> word", "a <b>bold</b> word"},
		{"html block is its text", "<details>\n<summary>Why</summary>\n</details>", "<details>\n<summary>Why</summary>\n</details>"},
		{"script is only text", "<script>alert(1)</script>", "<script>alert(1)</script>"},
		{"control characters shown, never sent", "a\x1b[31mred\x07 b", "a^[[31mred^G b"},
		{"control characters in code", "```\n\x1b]0;title\x07\n```", "  ^[]0;title^G"},
		{"long word has its own line", "a " + strings.Repeat("x", 50) + " b", "a\n" + strings.Repeat("x", 50) + "\nb"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mdTerm{width: 40}.render([]byte(tt.in))
			if got != tt.want {
				t.Errorf("render(%q):\n%s\nwant:\n%s", tt.in, got, tt.want)
			}
		})
	}
}

// With colour, the markup's marks give way to the palette's styles, and
// every styled word closes its own style so that a wrapped line never
// carries one into the next line's indentation.
func TestRenderMarkdownInColour(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"heading", "## Hi there", "\x1b[2m## \x1b[0m\x1b[36m\x1b[1mHi there\x1b[0m\x1b[0m"},
		{"strong", "**a**", "\x1b[1ma\x1b[0m"},
		{"emphasis", "*a*", "\x1b[3ma\x1b[0m"},
		{"code span", "`a`", "\x1b[36ma\x1b[0m"},
		{"link", "[a](u)", "\x1b[4ma\x1b[0m \x1b[2m(u)\x1b[0m"},
		{"quote bar", "> a", "\x1b[2m│\x1b[0m a"},
		{"bullet", "- a", "\x1b[2m• \x1b[0ma"},
		{"code block", "    x", "  \x1b[2mx\x1b[0m"},
		{"text's own escape is shown", "\x1b[2J", "^[[2J"},
		{"a link's words underlined as one", "[a b](u)", "\x1b[4ma b\x1b[0m \x1b[2m(u)\x1b[0m"},
		{"table header bold", "| a `b` |\n|--|\n| c |", "\x1b[1ma\x1b[0m \x1b[36m\x1b[1mb\x1b[0m\x1b[0m\n\x1b[2m───\x1b[0m\nc"},
		{"too wide a table", "| h |\n|--|\n| " + strings.Repeat("x ", 30) + "|", "\x1b[1mh:\x1b[0m x x x x x x x x x x x x x x x x x x\n  x x x x x x x x x x x x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mdTerm{pal: Palette{On: true}, width: 40}.render([]byte(tt.in))
			if got != tt.want {
				t.Errorf("render(%q):\n%q\nwant:\n%q", tt.in, got, tt.want)
			}
		})
	}
	// A strong span wrapped over two lines is closed on the first.
	got := mdTerm{pal: Palette{On: true}, width: 20}.render([]byte("**one two three four five six**"))
	for _, l := range strings.Split(got, "\n") {
		if strings.Count(l, "\x1b[1m") != strings.Count(l, "\x1b[0m") {
			t.Errorf("a line leaves its style open: %q", l)
		}
	}
}

// Deeply nested lists and quotes stop indenting before their text has
// no room left.
func TestRenderMarkdownDeepNesting(t *testing.T) {
	in := strings.Repeat("> ", 30) + "a few words of text"
	got := mdTerm{width: 40}.render([]byte(in))
	for _, l := range strings.Split(got, "\n") {
		if w := ansi.StringWidth(l); w > 40 {
			t.Errorf("%d columns: %q", w, l)
		}
	}
	if !strings.Contains(got, "a few words of") || !strings.HasSuffix(got, "text") {
		t.Errorf("the text is lost:\n%s", got)
	}
}

// longWord is a line that overflows only because of one word: what is
// left after its indentation, bullets, numbers and bars has no space.
var longWord = regexp.MustCompile(`^[ │•#0-9.)]*[^ ]+$`)

func FuzzRenderMarkdown(f *testing.F) {
	for _, s := range []string{
		"# h\n\npara *em* **strong** `code`\n\n- a\n  - b\n1. c\n\n> q\n\n---\n",
		"| a | b |\n|---|:-:|\n| c | d |\n",
		"```\ncode\n```\n\n    indented\n",
		"<div>\nhtml\n</div>\n\n[l](http://x) <http://y> ![i](z)\n",
		"a  \nb\\\nc ~~s~~ &amp; \x1b[31m",
		"1. a\n\n   b\n\n   > c\n   > - d\n",
	} {
		f.Add(s, 40)
	}
	f.Fuzz(func(t *testing.T, src string, width int) {
		width = 20 + abs(width)%120
		got := mdTerm{width: width}.render([]byte(src))
		if strings.ContainsRune(got, '\x1b') {
			t.Fatalf("plain output has an escape: %q", got)
		}
		if hasCode(src) {
			return
		}
		for _, l := range strings.Split(got, "\n") {
			if ansi.StringWidth(l) > width && !longWord.MatchString(l) {
				t.Fatalf("line of %d columns at width %d: %q\nfrom %q", ansi.StringWidth(l), width, l, src)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// hasCode tells whether src has a block whose lines are shown unwrapped.
func hasCode(src string) bool {
	doc := mdParser().Parser().Parse(text.NewReader([]byte(src)))
	found := false
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		switch n.(type) {
		case *ast.CodeBlock, *ast.FencedCodeBlock:
			found = true
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	return found
}
