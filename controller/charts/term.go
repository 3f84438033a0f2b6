package charts

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/walkie-sh/walkie/walkie"
)

// TermOptions say how to draw for a terminal. The command layer decides
// them from its output: a terminal gets Unicode bars, and colour unless
// NO_COLOR or --color says otherwise; a pipe gets plain ASCII text.
type TermOptions struct {
	Width   int  // columns; 0 or more than 80 is 80, less than 40 is 40
	Colour  bool // SGR colours, one per outcome
	Unicode bool // block characters; false: ASCII only
}

// maxColumns is the widest a terminal chart gets, whatever the terminal:
// eighty columns read at a glance and paste anywhere.
const maxColumns = 80

func (o TermOptions) width() int {
	if o.Width <= 0 || o.Width > maxColumns {
		return maxColumns
	}
	return max(o.Width, 40)
}

// statusSGR is each outcome's terminal colour.
var statusSGR = map[string]string{
	walkie.StatusConverged:  "32",
	walkie.StatusClosed:     "32",
	walkie.StatusMaxRounds:  "33",
	walkie.StatusDeadlocked: "35",
	walkie.StatusOverBudget: "91",
	walkie.StatusFailed:     "31",
	walkie.StatusHalted:     "90",
	walkie.StatusOpen:       "36",
}

// Glyphs tell the outcomes apart without colour: the first outcome
// present gets the first, and so on; past the last, the last.
var (
	unicodeGlyphs = []rune("█▓▒░▚▞╳·")
	asciiGlyphs   = []rune("#=-.x+*~")
)

// glyphs gives each of statuses its character.
func (o TermOptions) glyphs(statuses []string) map[string]rune {
	set := asciiGlyphs
	if o.Unicode {
		set = unicodeGlyphs
	}
	out := map[string]rune{}
	for i, s := range statuses {
		out[s] = set[min(i, len(set)-1)]
		if o.Colour {
			out[s] = '█' // colour tells them apart
			if !o.Unicode {
				out[s] = '#'
			}
		}
	}
	return out
}

func (o TermOptions) paint(status, s string) string {
	sgr, ok := statusSGR[status]
	if !o.Colour || !ok || s == "" {
		return s
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}

// Text writes the histograms for a terminal, each line at most
// o.Width columns.
func (d *Distribution) Text(w io.Writer, o TermOptions) error {
	var b strings.Builder
	g := o.glyphs(d.Statuses)
	for i, p := range d.panels() {
		if i > 0 {
			b.WriteString("\n")
		}
		writeBars(&b, p, o, g)
	}
	b.WriteString("\n" + d.termLegend(o, g) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBars is one histogram: a title line, then a bar per bin with its
// number, scaled so the largest fills the width.
func writeBars(b *strings.Builder, p panel, o TermOptions, glyph map[string]rune) {
	width := o.width()
	b.WriteString(o.clip(o.label(p.title+", "+p.sub), width) + "\n")
	if len(p.bins) == 0 {
		b.WriteString("  none\n")
		return
	}
	labelW, most := 0, 0
	for _, bin := range p.bins {
		labelW = max(labelW, utf8.RuneCountInString(o.label(bin.Label)))
		most = max(most, bin.Total())
	}
	labelW = min(labelW, 20)
	countW := len(strconv.Itoa(most))
	room := width - 2 - labelW - 2 - 1 - countW
	for _, bin := range p.bins {
		label := o.clip(o.label(bin.Label), labelW)
		fmt.Fprintf(b, "  %s%s  ", label, strings.Repeat(" ", labelW-utf8.RuneCountInString(label)))
		lens := segments(bin.Parts, most, room)
		for i, part := range bin.Parts {
			b.WriteString(o.paint(part.Status, strings.Repeat(string(glyph[part.Status]), lens[i])))
		}
		fmt.Fprintf(b, " %d\n", bin.Total())
	}
}

// clip cuts s to n columns, with an ellipsis a pipe can hold.
func (o TermOptions) clip(s string, n int) string {
	if o.Unicode {
		return clip(s, n)
	}
	return clipWith(s, n, "~")
}

// label is a label with nothing a terminal would act on (an outcome is
// read from files an agent may write), and in ASCII for a pipe.
func (o TermOptions) label(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return '?'
		case !o.Unicode && r == '–':
			return '-'
		case !o.Unicode && r >= utf8.RuneSelf:
			return '?'
		}
		return r
	}, oneLine(s))
}

// segments are the lengths of a bar's parts in a room of columns where
// most trials fill it: each part that holds a trial gets a column at
// least, and the bar never overflows.
func segments(parts []Part, most, room int) []int {
	lens := make([]int, len(parts))
	if most <= 0 || room <= 0 {
		return lens
	}
	total := 0
	for i, p := range parts {
		lens[i] = max(1, (p.Trials*room+most/2)/most)
		total += lens[i]
	}
	for total > room {
		i := slices.Index(lens, slices.Max(lens))
		if lens[i] <= 1 {
			break
		}
		lens[i]--
		total--
	}
	return lens
}

// termLegend names each outcome's glyph or colour, wrapped to the width.
func (d *Distribution) termLegend(o TermOptions, glyph map[string]rune) string {
	var b strings.Builder
	col := 0
	for _, s := range d.Statuses {
		plain := string(glyph[s]) + " " + o.label(s)
		n := utf8.RuneCountInString(plain)
		switch {
		case col > 0 && col+2+n > o.width():
			b.WriteString("\n")
			col = 0
		case col > 0:
			b.WriteString("  ")
			col += 2
		}
		b.WriteString(o.paint(s, string(glyph[s])) + " " + o.label(s))
		col += n
	}
	return b.String()
}
