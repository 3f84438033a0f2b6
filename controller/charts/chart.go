package charts

import (
	"io"
	"strconv"
)

// Chart is a picture this package draws: the timeline, the agreement
// grid, the quorum replay, the distribution of trials.
type Chart interface {
	// SVG writes the chart as one SVG document.
	SVG(w io.Writer) error
	// frame is the chart's size, and what a screen reader says of it.
	frame() (width, height u, f frameText)
	// draw puts the chart onto c, inside its own frame.
	draw(c *canvas)
}

// frameText is a chart's class and accessible title and description.
type frameText struct{ class, title, desc string }

// writeSVG writes one chart as a document.
func writeSVG(w io.Writer, ch Chart) error {
	c := newCanvas(w)
	width, height, f := ch.frame()
	c.start("svg", "xmlns", svgNS, "class", "chart "+f.class, "viewBox", "0 0 "+width.String()+" "+height.String(),
		"width", width.String(), "height", height.String(), "role", "img",
		"font-family", font, "font-size", strconv.Itoa(textSize), "fill", inkColour)
	c.leaf("title", f.title)
	c.leaf("desc", f.desc)
	ch.draw(c)
	return c.close()
}

// Stack writes several charts as one SVG document, one under another
// (walkie report --svg: the timeline, then a round table's grid and
// replay). Charts that are nil are left out.
func Stack(w io.Writer, title string, charts ...Chart) error {
	var parts []Chart
	var width, height u
	for _, ch := range charts {
		if ch == nil || isNil(ch) {
			continue
		}
		parts = append(parts, ch)
		cw, chh, _ := ch.frame()
		width = max(width, cw)
		height += chh + px(gap)
	}
	c := newCanvas(w)
	c.start("svg", "xmlns", svgNS, "class", "chart stack", "viewBox", "0 0 "+width.String()+" "+height.String(),
		"width", width.String(), "height", height.String(), "role", "img",
		"font-family", font, "font-size", strconv.Itoa(textSize), "fill", inkColour)
	c.leaf("title", title)
	y := u(0)
	for _, ch := range parts {
		cw, chh, f := ch.frame()
		c.start("svg", "class", "chart "+f.class, "x", "0", "y", y.String(), "width", cw.String(), "height", chh.String(),
			"viewBox", "0 0 "+cw.String()+" "+chh.String(), "role", "img")
		c.leaf("title", f.title)
		c.leaf("desc", f.desc)
		ch.draw(c)
		c.end()
		y += chh + px(gap)
	}
	return c.close()
}

// gap is the space between stacked charts.
const gap = 12

// isNil sees through a typed nil in the interface: a chart constructor
// returns nil when it has nothing to draw.
func isNil(ch Chart) bool {
	switch v := ch.(type) {
	case *Timeline:
		return v == nil
	case *Agreement:
		return v == nil
	case *Quorum:
		return v == nil
	case *Distribution:
		return v == nil
	}
	return false
}
