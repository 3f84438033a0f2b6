package term

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// mdTerm renders markdown for a terminal: headings, paragraphs wrapped
// to a width, lists, code, quotes, links, tables. It is walkie's own, on
// goldmark, because a library that does this (glamour) costs every
// walkie process, `walkie post` included, about 20 ms of package
// initialisation for syntax highlighting and HTML sanitising that
// reading a debate never needs (docs/terminal.md).
//
// Colour comes only from the palette; with it off the output has no
// escape sequence at all, and none of the text's own control characters
// reach the terminal in either mode.
type mdTerm struct {
	pal   Palette
	width int // columns the text may take, margins left out
}

// mdParser reads CommonMark with GFM tables and strikethrough, what
// agents write.
var mdParser = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))
})

// minColumns is the narrowest a nested block's text gets: deeper than
// that, quotes and lists stop indenting rather than wrap a word a line.
const minColumns = 16

// render is src rendered as lines, with no blank at the end of any and
// no newline after the last.
func (m mdTerm) render(src []byte) string {
	doc := mdParser().Parser().Parse(text.NewReader(src))
	lines := m.blocks(doc, src, max(m.width, minColumns))
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// blocks renders the children of a container, a blank line between two.
func (m mdTerm) blocks(parent ast.Node, src []byte, width int) []string {
	var out []string
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		b := m.block(n, src, width)
		if len(b) == 0 {
			continue
		}
		if len(out) > 0 && !tightItem(n) {
			out = append(out, "")
		}
		out = append(out, b...)
	}
	return out
}

// tightItem is a list item of a tight list, or the block after a tight
// item's paragraph: no blank line before it.
func tightItem(n ast.Node) bool {
	if _, ok := n.(*ast.ListItem); ok {
		l, _ := n.Parent().(*ast.List)
		return l != nil && l.IsTight
	}
	if it, ok := n.Parent().(*ast.ListItem); ok {
		l, _ := it.Parent().(*ast.List)
		return l != nil && l.IsTight
	}
	return false
}

// block renders one block to lines of at most width columns (but for
// code, and words longer than the width).
func (m mdTerm) block(n ast.Node, src []byte, width int) []string {
	switch n := n.(type) {
	case *ast.Heading:
		mark := strings.Repeat("#", n.Level) + " "
		words := m.inlines(n, src, styleBold|styleCyan)
		return prefixed(wrap(words, width-len(mark)), m.pal.Dim(mark), strings.Repeat(" ", len(mark)))
	case *ast.Paragraph, *ast.TextBlock:
		return wrap(m.inlines(n, src, 0), width)
	case *ast.ThematicBreak:
		return []string{m.pal.Dim(strings.Repeat("─", min(width, 40)))}
	case *ast.CodeBlock, *ast.FencedCodeBlock:
		return m.code(n, src)
	case *ast.HTMLBlock:
		return m.html(n, src, width)
	case *ast.Blockquote:
		if width-2 < minColumns {
			return m.blocks(n, src, width)
		}
		return prefixed(m.blocks(n, src, width-2), m.pal.Dim("│")+" ", m.pal.Dim("│")+" ")
	case *ast.List:
		return m.list(n, src, width)
	case *east.Table:
		return m.table(n, src, width)
	}
	// A block of an extension not enabled here: its text, wrapped.
	if n.Type() == ast.TypeBlock && n.HasChildren() {
		return m.blocks(n, src, width)
	}
	return nil
}

// list renders items with their bullet or number, the lines after an
// item's first indented under its text.
func (m mdTerm) list(l *ast.List, src []byte, width int) []string {
	var out []string
	num := l.Start
	widest := len(strconv.Itoa(num + l.ChildCount() - 1))
	for it := l.FirstChild(); it != nil; it = it.NextSibling() {
		mark := "• "
		if l.IsOrdered() {
			n := strconv.Itoa(num)
			mark = strings.Repeat(" ", widest-len(n)) + n + string(l.Marker) + " "
			num++
		}
		indent := ansi.StringWidth(mark)
		if width-indent < minColumns {
			indent, mark = 0, strings.TrimSpace(mark)+" "
		}
		body := m.blocks(it, src, width-indent)
		if len(body) == 0 {
			body = []string{""}
		}
		if len(out) > 0 && !l.IsTight {
			out = append(out, "")
		}
		if indent == 0 {
			body[0] = mark + body[0]
			out = append(out, body...)
			continue
		}
		out = append(out, prefixed(body, m.pal.Dim(mark), strings.Repeat(" ", indent))...)
	}
	return out
}

// code is a code block's lines as they are, tabs made spaces, indented
// and dim; never wrapped, so that it can be copied.
func (m mdTerm) code(n ast.Node, src []byte) []string {
	var out []string
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		l := strings.TrimRight(Clean(expandTabs(string(seg.Value(src)))), "\r\n")
		out = append(out, "  "+m.pal.Dim(l))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// html is a block of raw HTML shown as the text it is, never read as
// markup, each of its lines wrapped.
func (m mdTerm) html(n *ast.HTMLBlock, src []byte, width int) []string {
	var out []string
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		out = append(out, m.plainLine(seg.Value(src), width)...)
	}
	if n.HasClosure() {
		out = append(out, m.plainLine(n.ClosureLine.Value(src), width)...)
	}
	return out
}

// plainLine is one line of source text wrapped, with no markup read in it.
func (m mdTerm) plainLine(b []byte, width int) []string {
	ws := words{pal: m.pal}
	ws.add(string(bytes.TrimRight(b, "\r\n")), 0)
	return wrap(ws, width)
}

// table lays out a GFM table in aligned columns, or, when it is wider
// than width, each row as "header: cell" lines so that nothing is cut.
func (m mdTerm) table(t *east.Table, src []byte, width int) []string {
	var rows [][]words
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		base := style(0)
		if _, ok := r.(*east.TableHeader); ok {
			base = styleBold
		}
		var row []words
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			row = append(row, m.inlines(c, src, base))
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil
	}
	cols := len(rows[0])
	widths := make([]int, cols)
	for _, row := range rows {
		for i, c := range row[:min(len(row), cols)] {
			widths[i] = max(widths[i], c.width())
		}
	}
	total := 3 * (cols - 1)
	for _, w := range widths {
		total += w
	}
	if total > width {
		return m.tableRows(rows, width)
	}
	sep := m.pal.Dim(" │ ")
	var out []string
	for r, row := range rows {
		cells := make([]string, cols)
		for i := range cols {
			var c words
			if i < len(row) {
				c = row[i]
			}
			cells[i] = align(m.pal.painted(c.joined()), c.width(), widths[i], alignOf(t, i))
		}
		out = append(out, strings.Join(cells, sep))
		if r == 0 {
			bars := make([]string, cols)
			for i, w := range widths {
				bars[i] = strings.Repeat("─", w)
			}
			out = append(out, m.pal.Dim(strings.Join(bars, "─┼─")))
		}
	}
	return out
}

// tableRows is a table too wide for the terminal: a block a row, each
// cell on a line of its own after its header.
func (m mdTerm) tableRows(rows [][]words, width int) []string {
	var out []string
	for _, row := range rows[1:] {
		if len(out) > 0 {
			out = append(out, "")
		}
		for i, c := range row {
			ws := words{pal: m.pal}
			if i < len(rows[0]) {
				// The header's last word takes the colon, in a copy.
				ws.list = slices.Clone(rows[0][i].list)
				if last := len(ws.list) - 1; last >= 0 && ws.list[last] != nil {
					ws.list[last] = slices.Clip(ws.list[last])
					ws.open = true
				}
			}
			ws.add(":", styleBold)
			ws.space()
			ws.list = append(ws.list, c.list...)
			out = append(out, prefixed(wrap(ws, width-2), "", "  ")...)
		}
	}
	return out
}

func alignOf(t *east.Table, i int) east.Alignment {
	if i < len(t.Alignments) {
		return t.Alignments[i]
	}
	return east.AlignNone
}

// align pads s, of n columns, to w columns as the table's column asks.
func align(s string, n, w int, a east.Alignment) string {
	gap := max(0, w-n)
	switch a {
	case east.AlignRight:
		return strings.Repeat(" ", gap) + s
	case east.AlignCenter:
		return strings.Repeat(" ", gap/2) + s + strings.Repeat(" ", gap-gap/2)
	}
	return s + strings.Repeat(" ", gap)
}

// prefixed puts first before the first line and rest before the others.
func prefixed(lines []string, first, rest string) []string {
	for i := range lines {
		if i == 0 {
			lines[i] = first + lines[i]
		} else {
			lines[i] = rest + lines[i]
		}
	}
	return lines
}

// style is the set of the palette's weights and colours a piece of
// text is painted with.
type style uint8

const (
	styleBold style = 1 << iota
	styleItalic
	styleUnderline
	styleStrike
	styleCyan
	styleDim
)

// styled is s painted in st.
func (p Palette) styled(st style, s string) string {
	for _, f := range []struct {
		bit   style
		paint func(Palette, string) string
	}{{styleBold, Palette.Bold}, {styleItalic, Palette.italic}, {styleUnderline, Palette.underline},
		{styleStrike, Palette.strike}, {styleCyan, Palette.Cyan}, {styleDim, Palette.Dim}} {
		if st&f.bit != 0 {
			s = f.paint(p, s)
		}
	}
	return s
}

// piece is text in one style: a word may be made of several.
type piece struct {
	text  string
	style style
}

// words is inline text cut where it may wrap: each word a run of pieces,
// a nil word a hard line break.
type words struct {
	pal  Palette
	list [][]piece
	open bool // the last word takes more pieces (no space since)
}

// add appends text in style, splitting it at spaces.
func (ws *words) add(s string, st style) {
	s = Clean(s)
	for s != "" {
		i := strings.IndexFunc(s, unicode.IsSpace)
		if i == 0 {
			ws.open = false
			_, size := utf8.DecodeRuneInString(s)
			s = s[size:]
			continue
		}
		if i < 0 {
			i = len(s)
		}
		p := piece{text: s[:i], style: st}
		if ws.open {
			last := len(ws.list) - 1
			ws.list[last] = append(ws.list[last], p)
		} else {
			ws.list = append(ws.list, []piece{p})
		}
		ws.open = true
		s = s[i:]
	}
}

// space ends the current word.
func (ws *words) space() { ws.open = false }

// hardBreak ends the line.
func (ws *words) hardBreak() {
	ws.list = append(ws.list, nil)
	ws.open = false
}

// joined is every word on one line, hard breaks and all, for a table
// cell.
func (ws words) joined() []piece {
	return joined(slices.DeleteFunc(slices.Clone(ws.list), func(w []piece) bool { return w == nil }))
}

// width is the columns of every word on one line.
func (ws words) width() int {
	n := 0
	for _, p := range ws.joined() {
		n += ansi.StringWidth(p.text)
	}
	return n
}

// inlines collects the inline content of n as words, base the style of
// all of it (a heading's).
func (m mdTerm) inlines(n ast.Node, src []byte, base style) words {
	ws := words{pal: m.pal}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		m.inline(&ws, c, src, base)
	}
	return ws
}

func (m mdTerm) inline(ws *words, n ast.Node, src []byte, st style) {
	plain := !m.pal.On
	switch n := n.(type) {
	case *ast.Text:
		ws.add(inlineText(n, src), st)
		switch {
		case n.HardLineBreak():
			ws.hardBreak()
		case n.SoftLineBreak():
			ws.space()
		}
		return
	case *ast.String:
		ws.add(string(n.Value), st)
		return
	case *ast.CodeSpan:
		var b strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				b.Write(t.Value(src))
			} else if s, ok := c.(*ast.String); ok {
				b.Write(s.Value)
			}
		}
		m.marked(ws, "`", b.String(), plain, st|styleCyan)
		return
	case *ast.Emphasis:
		mark, p := "*", styleItalic
		if n.Level >= 2 {
			mark, p = "**", styleBold
		}
		m.wrapped(ws, n, src, mark, plain, st|p)
		return
	case *east.Strikethrough:
		m.wrapped(ws, n, src, "~~", plain, st|styleStrike)
		return
	case *ast.Link:
		m.link(ws, n, src, string(n.Destination), st)
		return
	case *ast.Image:
		ws.add("[image:", st)
		ws.space()
		m.link(ws, n, src, string(n.Destination), st)
		ws.add("]", st)
		return
	case *ast.AutoLink:
		ws.add(string(n.Label(src)), st|styleCyan)
		return
	case *ast.RawHTML:
		segs := n.Segments
		for i := range segs.Len() {
			seg := segs.At(i)
			ws.add(string(seg.Value(src)), st)
		}
		return
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		m.inline(ws, c, src, st)
	}
}

// inlineText is a text node's text with its backslash escapes and
// character references resolved, as an HTML renderer would.
func inlineText(n *ast.Text, src []byte) string {
	b := n.Segment.Value(src)
	if n.IsRaw() {
		return string(b)
	}
	return string(util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(b))))
}

// wrapped is n's content between marks in plain text ("**strong**"),
// in style alone with colour.
func (m mdTerm) wrapped(ws *words, n ast.Node, src []byte, mark string, plain bool, st style) {
	if plain {
		ws.add(mark, st)
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		m.inline(ws, c, src, st)
	}
	if plain {
		ws.add(mark, st)
	}
}

// marked is s between marks in plain text, in style with colour.
func (m mdTerm) marked(ws *words, mark, s string, plain bool, st style) {
	if plain {
		s = mark + s + mark
	}
	ws.add(s, st)
}

// link is its text, then its destination when that says more.
func (m mdTerm) link(ws *words, n ast.Node, src []byte, dest string, st style) {
	before := len(ws.list)
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		m.inline(ws, c, src, st|styleUnderline)
	}
	var label strings.Builder
	for _, w := range ws.list[before:] {
		for _, p := range w {
			label.WriteString(p.text)
		}
	}
	if dest == "" || label.String() == dest {
		return
	}
	ws.space()
	ws.add("("+dest+")", st|styleDim)
}

// painted is a line's pieces painted: a run of pieces in one style is
// one escape sequence, closed on the line it opens on.
func (p Palette) painted(line []piece) string {
	var b, run strings.Builder
	var cur style
	for _, pc := range line {
		if pc.style != cur {
			b.WriteString(p.styled(cur, run.String()))
			run.Reset()
			cur = pc.style
		}
		run.WriteString(pc.text)
	}
	b.WriteString(p.styled(cur, run.String()))
	return b.String()
}

// joined is words on one line; the space between two words takes their
// style when both have it, so that a link is underlined as one.
func joined(ws [][]piece) []piece {
	var line []piece
	for _, w := range ws {
		if len(line) > 0 {
			st := line[len(line)-1].style
			if w[0].style != st {
				st = 0
			}
			line = append(line, piece{text: " ", style: st})
		}
		line = append(line, w...)
	}
	return line
}

// wrap lays words out in lines of at most width columns; a word longer
// than that has a line of its own.
func wrap(ws words, width int) []string {
	var out []string
	var line [][]piece
	cols := 0
	flush := func() {
		out = append(out, ws.pal.painted(joined(line)))
		line, cols = nil, 0
	}
	for _, w := range ws.list {
		if w == nil {
			flush()
			continue
		}
		n := 0
		for _, p := range w {
			n += ansi.StringWidth(p.text)
		}
		if len(line) > 0 && cols+1+n > width {
			flush()
		}
		if len(line) > 0 {
			cols++
		}
		line = append(line, w)
		cols += n
	}
	if len(line) > 0 || len(out) == 0 {
		flush()
	}
	if len(out) == 1 && out[0] == "" {
		return nil
	}
	return out
}

// Clean makes the text's control characters visible ("^[" for ESC) so
// that the text can never drive the terminal; a tab is a space. Every
// text walkie did not write itself goes through it on its way to a
// person: an entry's markdown, and a reason, a note, a model name, a
// CLI's detail, a file or an agent's name printed beside it.
func Clean(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteByte(' ')
		case r == '\n':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + 0x40)
		case r == 0x7f:
			b.WriteString("^?")
		case isControl(r):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isControl is a C0 or C1 control character or DEL (newline included,
// which Clean keeps), or an invalid byte.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError
}

// expandTabs puts spaces for tabs, to the next stop of four.
func expandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		if r == '\t' {
			n := 4 - col%4
			b.WriteString(strings.Repeat(" ", n))
			col += n
			continue
		}
		b.WriteRune(r)
		col++
	}
	return b.String()
}
