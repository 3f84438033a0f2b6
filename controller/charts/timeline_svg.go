package charts

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// The timeline's frame, in units: narrow enough that a phone shows its
// labels at a readable size when the chart fills the screen's width.
const (
	chartWidth = 400
	marginX    = 10
	stripH     = 42
	costH      = 70
)

// timelineFrame maps the timeline's times to x.
type timelineFrame struct {
	start  time.Time
	spanMS int64
	x0, w  u
}

func (f timelineFrame) x(t time.Time) u {
	return f.x0 + scale(t.Sub(f.start).Milliseconds(), f.spanMS, f.w)
}

// SVG writes the timeline as one SVG document.
func (t *Timeline) SVG(w io.Writer) error { return writeSVG(w, t) }

// timelineLayout is where the timeline's parts go.
type timelineLayout struct {
	f                         timelineFrame
	span                      time.Duration
	stripsTop, axisY, costTop u
	legendY, height           u
	hasCost                   bool
	items                     []legendItem
}

func (t *Timeline) layout() timelineLayout {
	span := t.End.Sub(t.Start)
	if span <= 0 {
		span = time.Minute // one instant, or nothing: a minute's frame
	}
	l := timelineLayout{span: span, f: timelineFrame{start: t.Start, spanMS: span.Milliseconds(), x0: px(marginX), w: px(chartWidth - 2*marginX)}}
	l.stripsTop = px(headH + 16)
	l.axisY = l.stripsTop + px(stripH*max(len(t.Strips), 1)) + px(4)
	l.costTop = l.axisY + px(44)
	l.hasCost = len(t.Cost) > 0 || t.BudgetUSD > 0 || t.CostUSD > 0
	l.legendY = l.axisY + px(40)
	if l.hasCost {
		l.legendY = l.costTop + px(costH+24)
	}
	l.items = t.legendItems()
	l.height = l.legendY + px(16*legendRows(l.items, px(chartWidth-2*marginX))) + px(4)
	return l
}

func (t *Timeline) frame() (u, u, frameText) {
	return px(chartWidth), t.layout().height, frameText{class: "timeline", title: "Timeline of " + oneLine(t.ID), desc: t.describe()}
}

func (t *Timeline) draw(c *canvas) {
	l := t.layout()
	f := l.f
	t.drawHead(c)
	c.start("g", "class", "rounds", "font-size", strconv.Itoa(smallSize), "fill", mutedInk)
	for _, r := range t.Rounds {
		x := f.x(r.At)
		c.line(x, px(headH), x, l.axisY, gridLine, "stroke-dasharray", "3 3")
		c.text(x+px(2), px(headH+11), "round "+strconv.Itoa(r.Round))
	}
	c.end()
	for i, s := range t.Strips {
		drawStrip(c, f, s, l.stripsTop+px(stripH*i))
	}
	if t.Attempts() == 0 && !slices.ContainsFunc(t.Strips, func(s Strip) bool { return len(s.Posts) > 0 }) {
		c.text(px(chartWidth/2), l.stripsTop+px(30), "no turn yet", "text-anchor", "middle", "fill", mutedInk)
	}
	if t.Ended() && !t.End.IsZero() {
		t.drawEnd(c, f.x(t.End), l.axisY)
	}
	drawTimeAxis(c, f, t.Start, l.span, l.axisY)
	if l.hasCost {
		t.drawCost(c, f, l.costTop)
	}
	c.legend(px(marginX), l.legendY, px(chartWidth-2*marginX), l.items)
}

// drawHead is the debate's name and where it stands.
func (t *Timeline) drawHead(c *canvas) {
	parts := []string{t.Status}
	if t.RoundCap > 0 {
		parts = append(parts, fmt.Sprintf("round %d of %d", t.Round, t.RoundCap))
	}
	parts = append(parts, costWords(t.Head))
	end := ""
	if t.Ended() {
		end = t.endWords()
	}
	c.heading(px(chartWidth), t.ID, strings.Join(parts, " · "), end)
}

// costWords is the head's cost: "$0.42 of $1.00", with what is unknown.
func costWords(h Head) string {
	s := walkie.Money(h.CostUSD)
	if h.BudgetUSD > 0 {
		s += " of " + walkie.Money(h.BudgetUSD)
	}
	if h.UnknownCosts > 0 {
		s += fmt.Sprintf(" (+%d of unknown cost)", h.UnknownCosts)
	}
	return s
}

// drawStrip is one party's row: its name, then its attempts and posts.
func drawStrip(c *canvas, f timelineFrame, s Strip, y u) {
	c.start("g", "class", "strip")
	c.text(px(marginX), y+px(13), clip(oneLine(s.Agent), 40), "font-weight", "bold")
	barY, barH := y+px(18), px(16)
	c.rect(f.x0, barY, f.w, barH, panelFill, "")
	for _, b := range s.Bars {
		x0, x1 := f.x(b.Start), f.x(b.End)
		c.rect(x0, barY, max(x1-x0, px(2)), barH, fillOf(b.Outcome), barTitle(s.Agent, b), "class", "attempt out-"+token(b.Outcome))
	}
	mid := barY + barH/2
	for _, p := range s.Posts {
		x := f.x(p.At)
		title := fmt.Sprintf("turn %d by %s, posted with walkie post at %s", p.Turn, oneLine(s.Agent), clock(p.At))
		c.titled("circle", title, "class", "post", "cx", x.String(), "cy", mid.String(), "r", "5", "fill", postFill, "stroke", inkColour, "stroke-width", "1.5")
		if p.Signed {
			signMark(c, x, mid, fmt.Sprintf("%s signed off in turn %d", oneLine(s.Agent), p.Turn))
		}
	}
	for _, b := range s.Bars {
		if b.Signed {
			signMark(c, f.x(b.End), mid, fmt.Sprintf("%s signed off in turn %d", oneLine(s.Agent), b.Turn))
		}
	}
	c.end()
}

// signMark is a sign-off: a diamond where the signed turn went in.
func signMark(c *canvas, x, y u, title string) {
	c.titled("polygon", title, "class", "signoff", "points", points(x, y-px(7), x+px(5), y, x, y+px(7), x-px(5), y), "fill", signFill, "stroke", "#ffffff")
}

// barTitle is an attempt's tooltip: everything the turn log says of it.
func barTitle(agent string, b Bar) string {
	var parts []string
	what := fmt.Sprintf("turn %d · %s", b.Turn, oneLine(agent))
	if b.Turn == 0 {
		what = oneLine(agent)
	}
	if b.Role != "" && b.Role != "participant" {
		what += " (" + oneLine(b.Role) + ")"
	}
	if b.Attempt > 1 {
		what += fmt.Sprintf(" · attempt %d", b.Attempt)
	}
	parts = append(parts, what, oneLine(b.Outcome))
	if b.Outcome == OutcomeRunning {
		parts[1] = "running for " + elapsed(b.End.Sub(b.Start))
	} else {
		parts = append(parts, elapsed(b.End.Sub(b.Start)))
	}
	if b.CostKnown {
		parts = append(parts, walkie.Money(b.CostUSD))
	}
	if b.Signed {
		parts = append(parts, "signed off")
	}
	if b.Detail != "" {
		parts = append(parts, clip(oneLine(b.Detail), 300))
	}
	return strings.Join(parts, " · ")
}

// endWords say how the debate ended: its status, and why when that is
// news (a person's halt, a failure).
func (t *Timeline) endWords() string {
	if t.Reason != "" && t.Status != walkie.StatusConverged {
		return t.Status + ": " + oneLine(t.Reason)
	}
	return t.Status
}

// drawEnd marks where the debate ended (the heading says how, above it).
func (t *Timeline) drawEnd(c *canvas, x, bottom u) {
	c.titled("line", t.endWords(), "class", "end", "x1", x.String(), "y1", px(headH).String(), "x2", x.String(), "y2", bottom.String(),
		"stroke", endInk, "stroke-width", "1.5")
}

// drawTimeAxis is the time since the first session's start, in round
// steps, with the start itself in UTC.
func drawTimeAxis(c *canvas, f timelineFrame, start time.Time, span time.Duration, y u) {
	c.start("g", "class", "axis", "font-size", strconv.Itoa(smallSize), "fill", mutedInk)
	c.line(f.x0, y, f.x0+f.w, y, mutedInk)
	step := tickStep(span)
	for d := time.Duration(0); d <= span; d += step {
		x := f.x(start.Add(d))
		c.line(x, y, x, y+px(4), mutedInk)
		anchor := "middle"
		if d == 0 {
			anchor = "start"
		} else if x > f.x0+f.w-px(16) {
			anchor = "end"
		}
		c.text(x, y+px(15), elapsed(d), "text-anchor", anchor)
	}
	if !start.IsZero() {
		c.text(f.x0, y+px(29), "time since the first session began, "+start.UTC().Format("2006-01-02 15:04:05")+" UTC")
	}
	c.end()
}

// tickSteps are the steps a time axis may take.
var tickSteps = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour}

// tickStep is the smallest round step that marks span at most six times.
func tickStep(span time.Duration) time.Duration {
	for _, s := range tickSteps {
		if span/s <= 6 {
			return s
		}
	}
	days := span / (24 * time.Hour) / 6
	return (days + 1) * 24 * time.Hour
}

// elapsed is a duration as the axis and tooltips say it: "0", "45s",
// "1m30s", "2h05m", "3d".
func elapsed(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Minute:
		return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + "s"
	case d < time.Hour:
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%02ds", m, s)
	case d < 24*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%02dm", h, m)
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05 UTC") }

// micro is usd in millionths, the cost axis's integer unit.
func micro(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// drawCost is the cost climbing, attempt by attempt, under the budget.
func (t *Timeline) drawCost(c *canvas, f timelineFrame, top u) {
	c.start("g", "class", "cost")
	words := "cost " + walkie.Money(t.CostUSD)
	if t.UnknownCosts > 0 {
		words += fmt.Sprintf(" (+%d of unknown cost)", t.UnknownCosts)
	}
	c.text(f.x0, top+px(10), words, "fill", costInk, "font-weight", "bold")
	if t.BudgetUSD > 0 {
		c.text(f.x0+f.w, top+px(10), "budget "+walkie.Money(t.BudgetUSD), "fill", budgetInk, "text-anchor", "end")
	}
	plotTop, plotBottom := top+px(18), top+px(18+costH-10)
	c.rect(f.x0, plotTop, f.w, plotBottom-plotTop, panelFill, "")
	most := max(micro(t.BudgetUSD), micro(t.CostUSD))
	for _, s := range t.Cost {
		most = max(most, micro(s.USD))
	}
	y := func(usd float64) u { return plotBottom - scale(micro(usd), most, plotBottom-plotTop) }
	if t.BudgetUSD > 0 {
		by := y(t.BudgetUSD)
		c.line(f.x0, by, f.x0+f.w, by, budgetInk, "stroke-dasharray", "5 3", "class", "budget")
	}
	xy := []u{f.x0, plotBottom}
	level := plotBottom
	for _, s := range t.Cost {
		x := f.x(s.At)
		level2 := y(s.USD)
		xy = append(xy, x, level, x, level2)
		level = level2
	}
	xy = append(xy, f.x0+f.w, level)
	c.titled("polyline", "the cost as the attempts ended: "+walkie.Money(t.CostUSD)+" in all", "class", "climb", "points", points(xy...), "fill", "none", "stroke", costInk, "stroke-width", "2")
	c.end()
}

// legendItems are the outcomes the chart shows, and its marks.
func (t *Timeline) legendItems() []legendItem {
	seen := map[string]bool{}
	signed, posted := false, false
	for _, s := range t.Strips {
		for _, b := range s.Bars {
			seen[b.Outcome] = true
			signed = signed || b.Signed
		}
		for _, p := range s.Posts {
			posted = true
			signed = signed || p.Signed
		}
	}
	outs := make([]string, 0, len(seen))
	for o := range seen {
		outs = append(outs, o)
	}
	slices.SortFunc(outs, func(a, b string) int {
		if d := outcomeOrder(a) - outcomeOrder(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var items []legendItem
	for _, o := range outs {
		items = append(items, legendItem{name: clip(oneLine(o), 24), fill: fillOf(o)})
	}
	if posted {
		items = append(items, legendItem{name: "posted by hand", fill: postFill, stroke: inkColour})
	}
	if signed {
		items = append(items, legendItem{name: "signed off", fill: signFill})
	}
	return items
}

// describe is the timeline in a sentence, for a screen reader.
func (t *Timeline) describe() string {
	counts := map[string]int{}
	for _, s := range t.Strips {
		for _, b := range s.Bars {
			counts[b.Outcome]++
		}
	}
	outs := make([]string, 0, len(counts))
	for o := range counts {
		outs = append(outs, o)
	}
	slices.SortFunc(outs, func(a, b string) int { return outcomeOrder(a) - outcomeOrder(b) })
	var cs []string
	for _, o := range outs {
		cs = append(cs, fmt.Sprintf("%d %s", counts[o], oneLine(o)))
	}
	s := fmt.Sprintf("%s: %s; %s by %s", t.ID, t.Status, walkie.Count(t.Attempts(), "attempt", "attempts"), walkie.Count(len(t.Strips), "party", "parties"))
	if len(cs) > 0 {
		s += " (" + strings.Join(cs, ", ") + ")"
	}
	if !t.Start.IsZero() {
		s += " over " + elapsed(t.End.Sub(t.Start))
	}
	return s + "; cost " + costWords(t.Head) + "."
}
