package charts

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/walkie-sh/walkie/controller/trials"
	"github.com/walkie-sh/walkie/walkie"
)

// Distribution is how a set of trials went, as histograms: the outcomes,
// the rounds each trial ran to its end, and what each cost, every bar
// split by the trials' outcomes.
type Distribution struct {
	Source string
	Trials int
	// Statuses are the outcomes present, in the order bars stack them.
	Statuses []string
	Outcomes []Bin // one bar per outcome, most frequent first
	Rounds   []Bin // one bar per number of rounds, from the fewest to the most
	Cost     []Bin // one bar per cost range, from the cheapest
}

// Bin is one bar: how many trials fell in it, by outcome.
type Bin struct {
	Label string
	Parts []Part // in Statuses' order, none empty
}

// Part is the trials of one outcome in a bin.
type Part struct {
	Status string
	Trials int
}

// Total is the trials in the bin.
func (b Bin) Total() int {
	n := 0
	for _, p := range b.Parts {
		n += p.Trials
	}
	return n
}

// NewDistribution is the histograms of the summary s.
func NewDistribution(s *trials.Summary) *Distribution {
	d := &Distribution{Source: s.Source, Trials: len(s.Trials)}
	for _, c := range s.Outcomes {
		d.Statuses = append(d.Statuses, c.Value)
		d.Outcomes = append(d.Outcomes, Bin{Label: c.Value, Parts: []Part{{c.Value, c.Trials}}})
	}
	slices.SortStableFunc(d.Statuses, func(a, b string) int { return cmp.Compare(statusRank(a), statusRank(b)) })
	if len(s.Trials) == 0 {
		return d
	}
	lo, hi := s.Trials[0].Rounds, s.Trials[0].Rounds
	for _, t := range s.Trials {
		lo, hi = min(lo, t.Rounds), max(hi, t.Rounds)
	}
	for r := lo; r <= hi; r++ {
		d.Rounds = append(d.Rounds, d.bin(walkie.Count(r, "round", "rounds"), s.Trials, func(t trials.Trial) bool { return t.Rounds == r }))
	}
	step, bins := costBins(micro(s.Cost.Max))
	for i := range bins {
		from, to := int64(i)*step, int64(i+1)*step
		last := i == bins-1
		label := walkie.Money(float64(from)/1e6) + "–" + walkie.Money(float64(to)/1e6)
		d.Cost = append(d.Cost, d.bin(label, s.Trials, func(t trials.Trial) bool {
			c := micro(t.CostUSD)
			return c >= from && (c < to || last)
		}))
	}
	return d
}

// bin counts the trials that fall in, by outcome.
func (d *Distribution) bin(label string, ts []trials.Trial, in func(trials.Trial) bool) Bin {
	n := map[string]int{}
	for _, t := range ts {
		if in(t) {
			n[t.Status]++
		}
	}
	b := Bin{Label: label}
	for _, s := range d.Statuses {
		if n[s] > 0 {
			b.Parts = append(b.Parts, Part{s, n[s]})
		}
	}
	return b
}

// costBins splits 0…most (micro-dollars) into at most eight ranges of a
// round width (1, 2 or 5 times a power of ten): the width and how many.
func costBins(most int64) (step int64, bins int) {
	if most <= 0 {
		return 10_000, 1 // every trial cost nothing known: one bar, $0–$0.01
	}
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			step = m * p
			if n := most/step + 1; n <= 8 {
				return step, int(n)
			}
		}
	}
}

// Geometry of the distribution's SVG, in units.
const (
	distLabelW = 96
	distRowH   = 20
	distHeadH  = 28
)

// panels are the distribution's three histograms with their titles.
func (d *Distribution) panels() []panel {
	return []panel{
		{"Outcomes", fmt.Sprintf("of %s", walkie.Count(d.Trials, "trial", "trials")), d.Outcomes},
		{"Rounds to the end", "trials by how many they ran", d.Rounds},
		{"Cost", "trials by what they cost", d.Cost},
	}
}

type panel struct {
	title, sub string
	bins       []Bin
}

// SVG writes the histograms as one SVG document.
func (d *Distribution) SVG(w io.Writer) error { return writeSVG(w, d) }

func (d *Distribution) frame() (u, u, frameText) {
	h := px(headH)
	for _, p := range d.panels() {
		h += px(distHeadH + distRowH*max(len(p.bins), 1) + 8)
	}
	h += px(16*legendRows(d.legend(), px(chartWidth-2*marginX))) + px(6)
	return px(chartWidth), h, frameText{class: "distribution", title: "Trials of " + oneLine(d.Source), desc: d.describe()}
}

func (d *Distribution) draw(c *canvas) {
	c.heading(px(chartWidth), "Trials of "+d.Source, walkie.Count(d.Trials, "copy", "copies")+", each an ordinary record", "")
	y := px(headH)
	for _, p := range d.panels() {
		y = d.drawPanel(c, p, y)
	}
	c.legend(px(marginX), y, px(chartWidth-2*marginX), d.legend())
}

// drawPanel is one histogram of horizontal bars from y down; it returns
// the y below it.
func (d *Distribution) drawPanel(c *canvas, p panel, y u) u {
	c.start("g", "class", "histogram "+token(p.title))
	c.text(px(marginX), y+px(16), p.title, "font-weight", "bold")
	c.text(px(marginX)+textWidth(p.title, textSize)*6/5+px(8), y+px(16), p.sub, "font-size", strconv.Itoa(smallSize), "fill", mutedInk)
	y += px(distHeadH)
	most := 0
	for _, b := range p.bins {
		most = max(most, b.Total())
	}
	x0 := px(marginX + distLabelW)
	width := px(chartWidth-marginX) - x0 - px(28)
	for _, b := range p.bins {
		c.text(px(marginX), y+px(14), clip(oneLine(b.Label), 13))
		x := x0
		for _, part := range b.Parts {
			w := scale(int64(part.Trials), int64(most), width)
			c.rect(x, y+px(3), w, px(14), statusColour(part.Status),
				fmt.Sprintf("%s: %s %s", oneLine(b.Label), walkie.Count(part.Trials, "trial", "trials"), oneLine(part.Status)),
				"class", "bar status-"+token(part.Status))
			x += w
		}
		c.text(x+px(4), y+px(14), strconv.Itoa(b.Total()), "fill", mutedInk)
		y += px(distRowH)
	}
	if len(p.bins) == 0 {
		c.text(x0, y+px(14), "none", "fill", mutedInk)
		y += px(distRowH)
	}
	c.end()
	return y + px(8)
}

func (d *Distribution) legend() []legendItem {
	var items []legendItem
	for _, s := range d.Statuses {
		items = append(items, legendItem{name: clip(oneLine(s), 24), fill: statusColour(s)})
	}
	return items
}

func (d *Distribution) describe() string {
	var parts []string
	for _, b := range d.Outcomes {
		parts = append(parts, fmt.Sprintf("%d %s", b.Total(), oneLine(b.Label)))
	}
	return fmt.Sprintf("%s of %s: %s.", walkie.Count(d.Trials, "trial", "trials"), oneLine(d.Source), strings.Join(parts, ", "))
}
