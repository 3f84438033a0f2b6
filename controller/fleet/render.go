package fleet

import (
	"bytes"
	"html/template"
	"net/url"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// markdown renders agents' text. Everything an agent writes is untrusted:
// raw HTML is shown as the text it is (an agent quoting `<script>` means
// the reader should see it), links keep only web and mail addresses, and
// images become links, so the page never loads anything an agent names.
// The daemon's Content-Security-Policy stands behind this: even markup
// that slipped through could not run a script or load another origin.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList, extension.Linkify),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(untrusted{}, 100))),
)

// Render turns markdown into HTML that is safe to put in the page.
func Render(src []byte) template.HTML {
	var b bytes.Buffer
	if err := markdown.Convert(src, &b); err != nil {
		// goldmark fails only when its writer does; a bytes.Buffer never
		// does. Show the text rather than nothing.
		return template.HTML("<pre>" + template.HTMLEscapeString(string(src)) + "</pre>")
	}
	return template.HTML(b.String()) //nolint:gosec // built by the renderer above, which escapes all agent text
}

// untrusted replaces goldmark's renderers for the nodes that could carry
// markup or addresses.
type untrusted struct{}

func (untrusted) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(ast.KindHTMLBlock, renderHTMLBlock)
	r.Register(ast.KindRawHTML, renderRawHTML)
	r.Register(ast.KindLink, renderLink)
	r.Register(ast.KindAutoLink, renderAutoLink)
	r.Register(ast.KindImage, renderImage)
}

// linkRel keeps a followed link from telling the target anything and from
// reaching back into the page.
const linkRel = `rel="nofollow noopener noreferrer"`

// renderHTMLBlock shows a block of raw HTML as its source text.
func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	if entering {
		_, _ = w.WriteString(`<pre class="raw-html">`)
		for i := range n.Lines().Len() {
			line := n.Lines().At(i)
			_, _ = w.Write(util.EscapeHTML(line.Value(source)))
		}
		return ast.WalkContinue, nil
	}
	if n.HasClosure() {
		_, _ = w.Write(util.EscapeHTML(n.ClosureLine.Value(source)))
	}
	_, _ = w.WriteString("</pre>\n")
	return ast.WalkContinue, nil
}

// renderRawHTML shows an inline tag as its source text.
func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	_, _ = w.WriteString(`<code class="raw-html">`)
	for i := range n.Segments.Len() {
		seg := n.Segments.At(i)
		_, _ = w.Write(util.EscapeHTML(seg.Value(source)))
	}
	_, _ = w.WriteString("</code>")
	return ast.WalkSkipChildren, nil
}

func renderLink(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Link)
	openLink(w, n.Destination, n.Title, entering, "")
	return ast.WalkContinue, nil
}

// renderImage makes an image a link to it: loading it would tell its host
// that someone reads the debate, and the page loads nothing but its own.
func renderImage(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.Image)
	openLink(w, n.Destination, n.Title, entering, "image: ")
	return ast.WalkContinue, nil
}

func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	dest := n.URL(source)
	if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(dest), []byte("mailto:")) {
		dest = append([]byte("mailto:"), dest...)
	}
	openLink(w, dest, nil, true, "")
	_, _ = w.Write(util.EscapeHTML(n.Label(source)))
	openLink(w, dest, nil, false, "")
	return ast.WalkContinue, nil
}

// openLink writes a link's opening tag (entering) or its closing one. An
// address that is not safe to follow keeps its text, in a span.
func openLink(w util.BufWriter, dest, title []byte, entering bool, prefix string) {
	safe := SafeURL(string(dest))
	if !entering {
		if safe {
			_, _ = w.WriteString("</a>")
		} else {
			_, _ = w.WriteString("</span>")
		}
		return
	}
	if !safe {
		_, _ = w.WriteString(`<span class="unsafe-link">` + template.HTMLEscapeString(prefix))
		return
	}
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML(util.URLEscape(dest, true)))
	_, _ = w.WriteString(`" ` + linkRel)
	if title != nil {
		_, _ = w.WriteString(` title="`)
		_, _ = w.Write(util.EscapeHTML(title))
		_ = w.WriteByte('"')
	}
	_ = w.WriteByte('>')
	_, _ = w.WriteString(template.HTMLEscapeString(prefix))
}

// SafeURL reports whether a link may point at raw: an http, https or
// mailto address, or one relative to the page. Anything a browser could
// read otherwise (javascript:, data:, a scheme hidden behind a control
// character or an entity, which the markdown parser has already decoded)
// is refused.
func SafeURL(raw string) bool {
	if raw == "" || strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return u.Host != ""
	case "mailto":
		return true
	case "":
		// A relative reference; a colon before any slash would be read
		// as a scheme by some parsers.
		first, _, _ := strings.Cut(raw, "/")
		return !strings.Contains(first, ":")
	}
	return false
}
