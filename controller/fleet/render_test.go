package fleet

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The rendering of a hostile entry, byte for byte: raw HTML as text,
// only web, mail and relative links, images as links.
func TestRenderGolden(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "hostile.md"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(Render(src))
	golden := filepath.Join("testdata", "hostile.html")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("Render(testdata/hostile.md) changed; run go test -update and read the diff:\n%s", got)
	}
	checkSafe(t, got)
	for _, shown := range []string{"&lt;script&gt;</code>alert(1)", "&lt;img src=x onerror=alert(2)&gt;", "&lt;div onmouseover="} {
		if !strings.Contains(got, shown) {
			t.Errorf("the raw HTML %q is not shown as text", shown)
		}
	}
}

// allowedTags are the elements markdown may produce.
var allowedTags = map[string]bool{
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "p": true, "br": true, "hr": true,
	"a": true, "span": true, "em": true, "strong": true, "del": true, "code": true, "pre": true, "blockquote": true,
	"ul": true, "ol": true, "li": true, "input": true, "table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true,
}

// checkSafe asserts that h holds only markdown's elements, no handler,
// style or source attribute, and only safe links.
func checkSafe(t *testing.T, h string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(h))
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		if tt == html.CommentToken {
			t.Errorf("a comment in the output: %s", z.Token().Data)
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		if !allowedTags[tok.Data] {
			t.Errorf("the element <%s> in the output", tok.Data)
		}
		for _, a := range tok.Attr {
			switch a.Key {
			case "href":
				if !SafeURL(html.UnescapeString(a.Val)) && !SafeURL(a.Val) {
					t.Errorf("an unsafe href %q", a.Val)
				}
			case "rel", "title", "class", "start", "align", "checked", "disabled", "type", "id":
			default:
				t.Errorf("the attribute %s=%q on <%s>", a.Key, a.Val, tok.Data)
			}
		}
	}
}

func TestSafeURL(t *testing.T) {
	for raw, want := range map[string]bool{
		"https://example.com": true, "http://a.b/c?d#e": true, "mailto:a@b.c": true, "#frag": true, "notes/x.md": true,
		"/abs/path": true, "?q=1": true, "//example.com/x": true,
		"": false, "javascript:alert(1)": false, "JavaScript:x": false, " javascript:x": false, "java\tscript:x": false,
		"java\nscript:x": false, "data:text/html,x": false, "vbscript:x": false, "file:///etc/passwd": false,
		"a:b": false, "http:no-host": false, "https:\\\\evil": false, "\x00javascript:x": false,
	} {
		if got := SafeURL(raw); got != want {
			t.Errorf("SafeURL(%q) = %v, want %v", raw, got, want)
		}
	}
}

// Whatever an agent writes, the output is only markdown's elements with
// safe links.
func FuzzRender(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "hostile.md"))
	f.Add(string(seed))
	f.Add("<scr<script>ipt>alert(1)</script>")
	f.Add("[x](<javascript:alert(1)>)")
	f.Add("<a href='javascript:x'>a</a>")
	f.Add("![x](data:image/png;base64,AAAA)")
	f.Fuzz(func(t *testing.T, src string) {
		checkSafe(t, string(Render([]byte(src))))
	})
}
