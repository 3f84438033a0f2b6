package charts

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// Quorum is the quorum lever's replay as a chart: per rule, the round the
// recorded run would have stopped in and what it would have cost up to
// there (roundtable.Report.Replay's figures).
type Quorum struct {
	ID        string
	MaxRounds int
	Rules     []roundtable.Replay
}

// NewQuorum is the chart of the replays r holds; nil when it holds none.
func NewQuorum(r *roundtable.Report) *Quorum {
	if r == nil || len(r.Replays) == 0 {
		return nil
	}
	return &Quorum{ID: r.ID, MaxRounds: r.MaxRounds, Rules: r.Replays}
}

// decisionColour colours where a replayed run stops: a round table's
// decisions are named as the statuses they end in.
func decisionColour(d string) string { return colour(statusFill, d) }

// Geometry of the replay chart, in units: the rule, the rounds bar and
// its number, the cost bar and its figure.
const (
	quorumLabelW = 92
	quorumRowH   = 32
	quorumTop    = headH + 4
	roundsW      = 110
	costX        = quorumLabelW + roundsW + 30
	costFigureW  = 48
)

// SVG writes the chart as one SVG document.
func (q *Quorum) SVG(w io.Writer) error { return writeSVG(w, q) }

func (q *Quorum) frame() (u, u, frameText) {
	h := px(quorumTop+16+quorumRowH*len(q.Rules)) + px(8) + px(16*legendRows(q.legend(), px(chartWidth-2*marginX))) + px(8)
	return px(chartWidth), h, frameText{class: "quorum", title: "The quorum lever: " + oneLine(q.ID), desc: q.describe()}
}

func (q *Quorum) draw(c *canvas) {
	c.heading(px(chartWidth), "The quorum lever: "+q.ID, "each recorded round decided again; nothing ran again", "")
	rounds := q.MaxRounds
	var most int64
	for _, rp := range q.Rules {
		rounds = max(rounds, rp.Round)
		most = max(most, micro(rp.CostUSD))
	}
	xr, xc := px(marginX+quorumLabelW), px(marginX+costX)
	costW := px(chartWidth-marginX-costFigureW) - xc
	y := px(quorumTop)
	c.start("g", "class", "heads", "font-size", strconv.Itoa(smallSize), "fill", mutedInk)
	c.text(px(marginX), y+px(10), "quorum")
	c.text(xr, y+px(10), fmt.Sprintf("stops in round (cap %d)", q.MaxRounds))
	c.text(xc, y+px(10), "cost up to there")
	c.end()
	y += px(16)
	for _, rp := range q.Rules {
		c.start("g", "class", "rule")
		label := fmt.Sprintf("%d of %d", rp.Quorum, len(rp.Reviewers))
		weight := ""
		if rp.Recorded {
			weight = "bold"
			c.text(px(marginX), y+px(28), "the run's", "font-size", strconv.Itoa(smallSize), "fill", mutedInk)
		}
		c.titledText(px(marginX), y+px(17), label, "quorum "+label+": "+oneLine(strings.Join(rp.Reviewers, ", ")), "font-weight", weight)
		w := scale(int64(rp.Round), int64(rounds), px(roundsW))
		opacity, figure := "", strconv.Itoa(rp.Round)
		if !rp.Known {
			// Where it stops is not known: the bar is where it would
			// have gone on from.
			opacity, figure = "0.4", figure+"+"
		}
		c.rect(xr, y+px(5), max(w, px(2)), px(16), decisionColour(rp.Decision), ruleTitle(rp), "class", "rounds-bar decision-"+token(rp.Decision), "fill-opacity", opacity)
		c.text(xr+w+px(4), y+px(17), figure)
		cw := scale(micro(rp.CostUSD), most, costW)
		c.rect(xc, y+px(5), max(cw, px(2)), px(16), costInk, ruleTitle(rp), "class", "cost-bar")
		c.text(xc+cw+px(4), y+px(17), walkie.Money(rp.CostUSD))
		c.end()
		y += px(quorumRowH)
	}
	c.legend(px(marginX), y+px(8), px(chartWidth-2*marginX), q.legend())
}

func ruleTitle(rp roundtable.Replay) string {
	return fmt.Sprintf("quorum %d of %s: %s; cost up to there %s", rp.Quorum, oneLine(strings.Join(rp.Reviewers, ", ")), clip(oneLine(rp.Note), 300), walkie.Money(rp.CostUSD))
}

func (q *Quorum) legend() []legendItem {
	var seen []string
	for _, rp := range q.Rules {
		if !slices.Contains(seen, rp.Decision) {
			seen = append(seen, rp.Decision)
		}
	}
	slices.Sort(seen)
	var items []legendItem
	for _, d := range seen {
		name := clip(oneLine(d), 24)
		if d == roundtable.DecisionUnknown {
			name = "unknown: it would go on past the recorded rounds"
		}
		items = append(items, legendItem{name: name, fill: decisionColour(d)})
	}
	return items
}

func (q *Quorum) describe() string {
	var parts []string
	for _, rp := range q.Rules {
		at := "round " + strconv.Itoa(rp.Round) + " as " + rp.Decision
		if !rp.Known {
			at = "unknown after round " + strconv.Itoa(rp.Round)
		}
		parts = append(parts, fmt.Sprintf("quorum %d of %d stops %s for %s", rp.Quorum, len(rp.Reviewers), at, walkie.Money(rp.CostUSD)))
	}
	return oneLine(q.ID) + ": " + strings.Join(parts, "; ") + "."
}
