package charts

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// u is a length in tenths of a user unit: every coordinate is computed in
// integers, so a chart's bytes do not depend on floating-point rounding.
type u int64

// px is n whole units.
func px(n int) u { return u(n) * 10 }

// String is the length as SVG writes it: "12", "12.5".
func (v u) String() string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	s := sign + strconv.FormatInt(int64(v/10), 10)
	if r := v % 10; r != 0 {
		s += "." + strconv.FormatInt(int64(r), 10)
	}
	return s
}

// scale is v of total over length: where v falls on an axis of length
// units that holds total. total 0 puts everything at 0.
func scale(v, total int64, length u) u {
	if total <= 0 {
		return 0
	}
	return u(int64(length) * v / total)
}

// The chart's look, as presentation attributes (never style attributes:
// the daemon's page allows no inline style).
const (
	font      = "system-ui, -apple-system, Segoe UI, sans-serif"
	inkColour = "#1d1d1f"
	mutedInk  = "#6b6b70"
	gridLine  = "#d0d0d6"
	panelFill = "#f6f6f8"
	headSize  = 15
	textSize  = 12
	smallSize = 11
)

// charWidth is a guess at a character's width, in hundredths of the
// font size, for layout: labels are cut so they fit.
const charWidth = 55

// textWidth is a guess at how wide s is at size.
func textWidth(s string, size int) u {
	return u(utf8.RuneCountInString(s) * size * charWidth / 10)
}

// fits is how many characters at size fit in width.
func fits(width u, size int) int { return int(width) * 10 / (size * charWidth) }

// clip cuts s to n characters, with an ellipsis.
func clip(s string, n int) string { return clipWith(s, n, "…") }

// clipWith cuts s to n characters, the last of them mark.
func clipWith(s string, n int, mark string) string {
	if n < 1 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + mark
}

// oneLine makes a text fit one line of a label: line breaks and tabs
// become spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// canvas writes one SVG document. encoding/xml escapes every attribute
// value and every text (and replaces what XML cannot hold), and refuses an
// element closed out of order, so what comes out parses.
type canvas struct {
	enc  *xml.Encoder
	open []string
	err  error
}

const svgNS = "http://www.w3.org/2000/svg"

// newCanvas starts an SVG document.
// An element a line, indented, so a golden file's diff reads; the
// indent never falls inside a <text> (a tooltip on a text goes on a group
// around it: titledText).
func newCanvas(w io.Writer) *canvas {
	enc := xml.NewEncoder(w)
	enc.Indent("", " ")
	return &canvas{enc: enc}
}

// start opens an element; attrs are name, value pairs.
func (c *canvas) start(name string, attrs ...string) {
	if c.err != nil {
		return
	}
	if len(attrs)%2 != 0 {
		c.err = fmt.Errorf("svg <%s>: attributes come in pairs", name)
		return
	}
	el := xml.StartElement{Name: xml.Name{Local: name}}
	for i := 0; i < len(attrs); i += 2 {
		if attrs[i+1] == "" {
			continue // an attribute not given
		}
		el.Attr = append(el.Attr, xml.Attr{Name: xml.Name{Local: attrs[i]}, Value: attrs[i+1]})
	}
	c.err = c.enc.EncodeToken(el)
	c.open = append(c.open, name)
}

// end closes the element opened last.
func (c *canvas) end() {
	if c.err != nil || len(c.open) == 0 {
		return
	}
	name := c.open[len(c.open)-1]
	c.open = c.open[:len(c.open)-1]
	c.err = c.enc.EncodeToken(xml.EndElement{Name: xml.Name{Local: name}})
}

// chars writes text inside the element open.
func (c *canvas) chars(s string) {
	if s != "" && c.err == nil {
		c.err = c.enc.EncodeToken(xml.CharData(s))
	}
}

// leaf is an element holding text alone (possibly none).
func (c *canvas) leaf(name, text string, attrs ...string) {
	c.start(name, attrs...)
	c.chars(text)
	c.end()
}

// titled is an element with a tooltip and no text of its own.
func (c *canvas) titled(name, title string, attrs ...string) {
	c.start(name, attrs...)
	c.leaf("title", title)
	c.end()
}

// titledText is a label with a tooltip: a group holding both, so no
// white space goes into the text.
func (c *canvas) titledText(x, y u, s, title string, attrs ...string) {
	c.start("g")
	c.leaf("title", title)
	c.text(x, y, s, attrs...)
	c.end()
}

// rect is a rectangle; a title, when given, is its tooltip.
func (c *canvas) rect(x, y, w, h u, fill, title string, attrs ...string) {
	all := append([]string{"x", x.String(), "y", y.String(), "width", w.String(), "height", h.String(), "fill", fill}, attrs...)
	if title == "" {
		c.leaf("rect", "", all...)
		return
	}
	c.titled("rect", title, all...)
}

// line is a straight line.
func (c *canvas) line(x1, y1, x2, y2 u, stroke string, attrs ...string) {
	c.leaf("line", "", append([]string{"x1", x1.String(), "y1", y1.String(), "x2", x2.String(), "y2", y2.String(), "stroke", stroke}, attrs...)...)
}

// text writes a label at x, y (its baseline).
func (c *canvas) text(x, y u, s string, attrs ...string) {
	c.leaf("text", s, append([]string{"x", x.String(), "y", y.String()}, attrs...)...)
}

// close ends every open element and flushes the document.
func (c *canvas) close() error {
	for len(c.open) > 0 && c.err == nil {
		c.end()
	}
	if c.err != nil {
		return fmt.Errorf("write svg: %w", c.err)
	}
	if err := c.enc.Flush(); err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	return nil
}

// heading is a chart's title and the line under it, cut to fit width;
// an end, when given, is said at the title's right, in bold.
func (c *canvas) heading(width u, title, sub, end string) {
	room := width - px(2*marginX)
	if end != "" {
		end = clip(oneLine(end), fits(room/2, textSize))
		c.text(width-px(marginX), px(20), end, "text-anchor", "end", "font-weight", "bold", "class", "ending")
		room -= textWidth(end, textSize) + px(8)
	}
	c.text(px(marginX), px(20), clip(oneLine(title), fits(room, headSize)), "font-size", strconv.Itoa(headSize), "font-weight", "bold")
	c.text(px(marginX), px(38), clip(oneLine(sub), fits(width-px(2*marginX), textSize)), "fill", mutedInk)
}

// headH is the height a heading takes.
const headH = 46

// points is a polyline's points attribute.
func points(xy ...u) string {
	var b strings.Builder
	for i := 0; i+1 < len(xy); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(xy[i].String() + "," + xy[i+1].String())
	}
	return b.String()
}

// legend is a legend: a coloured square and a name per item, wrapped to
// width, from y down. It returns the y below it.
func (c *canvas) legend(x, y, width u, items []legendItem) u {
	cx := x
	for _, it := range items {
		w := itemWidth(it)
		if cx > x && cx+w > x+width {
			cx, y = x, y+px(16)
		}
		if it.fill == "" { // words alone
			c.text(cx, y+px(9), it.name, "font-size", strconv.Itoa(smallSize), "fill", mutedInk)
		} else {
			c.rect(cx, y, px(10), px(10), it.fill, "", "stroke", it.stroke)
			c.text(cx+px(14), y+px(9), it.name, "font-size", strconv.Itoa(smallSize), "fill", mutedInk)
		}
		cx += w
	}
	return y + px(16)
}

// legendRows is how many rows the legend of items takes in width.
func legendRows(items []legendItem, width u) int {
	if len(items) == 0 {
		return 0
	}
	rows, x := 1, u(0)
	for _, it := range items {
		w := itemWidth(it)
		if x > 0 && x+w > width {
			rows, x = rows+1, 0
		}
		x += w
	}
	return rows
}

// itemWidth is the room a legend's item takes: its swatch, its words
// and a space.
func itemWidth(it legendItem) u {
	w := textWidth(it.name, smallSize) + px(12)
	if it.fill != "" {
		w += px(14)
	}
	return w
}

// legendItem is one entry of a legend; with no fill, words alone.
type legendItem struct{ name, fill, stroke string }
