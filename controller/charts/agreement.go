package charts

import (
	"fmt"
	"io"
	"strconv"

	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// Agreement is a round table's verdicts against its hidden grader, round
// by round: who blocked, who approved, and who the grader bore out.
type Agreement struct {
	ID        string
	Quorum    int
	Reviewers []string
	Rounds    []AgreementRound
	// Scores are the report's, per reviewer in Reviewers' order.
	Scores []roundtable.ReviewerScore
	// Status is how the run ended (the standing's, as the report has it).
	Status string
}

// AgreementRound is one decided round.
type AgreementRound struct {
	Round    int
	Grader   string // pass, fail, timeout, error
	Decision string
	Cells    []Cell // one per reviewer, in Reviewers' order
}

// Cell is one reviewer's verdict in a round, set against the grader.
type Cell struct {
	Reviewer string
	Reading  string // approved, blocked, no-verdict; "" when it gave none that round
	Blockers int
	Call     string // right, missed, disputed, unknown
}

// How a verdict stands against the grader.
const (
	// CallRight: approved what the grader passed, or blocked what it
	// failed.
	CallRight = "right"
	// CallMissed: approved work the hidden tests failed.
	CallMissed = "missed"
	// CallDisputed: blocked work the hidden tests passed: a bug they
	// miss, or noise; the objection in the record says which.
	CallDisputed = "disputed"
	// CallUnknown: no verdict, or no grader result to set it against.
	CallUnknown = "unknown"
)

// NewAgreement is the grid of the round table report r; nil for a debate
// or a round table with no round decided.
func NewAgreement(r *roundtable.Report) *Agreement {
	if r == nil || len(r.RoundList) == 0 {
		return nil
	}
	a := &Agreement{ID: r.ID, Quorum: r.Quorum, Reviewers: r.Reviewers, Status: r.Status}
	byName := map[string]roundtable.ReviewerScore{}
	for _, s := range r.Scores {
		byName[s.Reviewer] = s
	}
	for _, name := range r.Reviewers {
		a.Scores = append(a.Scores, byName[name])
	}
	for _, rb := range r.RoundList {
		ar := AgreementRound{Round: rb.Round, Grader: rb.Grader, Decision: rb.Decision}
		for _, name := range r.Reviewers {
			read := rb.Verdicts[name]
			ar.Cells = append(ar.Cells, Cell{Reviewer: name, Reading: read, Blockers: rb.Blockers[name], Call: call(read, rb.Grader)})
		}
		a.Rounds = append(a.Rounds, ar)
	}
	return a
}

// call sets a reading against the grader's result.
func call(read, grader string) string {
	pass, fail := grader == roundtable.GraderPass, grader == roundtable.GraderFail
	switch {
	case !pass && !fail:
		return CallUnknown
	case read == roundtable.ReadApproved && pass, read == roundtable.ReadBlocked && fail:
		return CallRight
	case read == roundtable.ReadApproved:
		return CallMissed
	case read == roundtable.ReadBlocked:
		return CallDisputed
	}
	return CallUnknown
}

var callFill = map[string]string{CallRight: rightFill, CallMissed: wrongFill, CallDisputed: "#ffe0b2", CallUnknown: unsureFill}

// Grid geometry, in units.
const (
	gridNameW  = 84
	gridScoreW = 56
	gridRowH   = 24
	gridTop    = headH + 2
)

// SVG writes the grid as one SVG document.
func (a *Agreement) SVG(w io.Writer) error { return writeSVG(w, a) }

func (a *Agreement) cellW() u {
	room := px(chartWidth-2*marginX-gridNameW-gridScoreW) / u(max(len(a.Rounds), 1))
	return min(room, px(44))
}

func (a *Agreement) frame() (u, u, frameText) {
	h := px(gridTop+gridRowH*(2+len(a.Reviewers))) + px(8) + px(16*legendRows(a.legend(), px(chartWidth-2*marginX))) + px(20)
	return px(chartWidth), h, frameText{class: "agreement", title: "Verdicts against the grader: " + oneLine(a.ID), desc: a.describe()}
}

func (a *Agreement) draw(c *canvas) {
	cw := a.cellW()
	x0 := px(marginX + gridNameW)
	sub := fmt.Sprintf("quorum %d of %d · %s decided", a.Quorum, len(a.Reviewers), walkie.Count(len(a.Rounds), "round", "rounds"))
	if n := len(a.Rounds); n > 0 {
		sub += fmt.Sprintf(" · round %d: %s", a.Rounds[n-1].Round, a.Rounds[n-1].Decision)
	}
	c.heading(px(chartWidth), "Verdicts against the grader: "+a.ID, sub, "")
	y := px(gridTop)
	c.start("g", "class", "heads", "font-size", strconv.Itoa(smallSize), "fill", mutedInk)
	c.text(px(marginX), y+px(15), "round")
	for i, r := range a.Rounds {
		c.titledText(x0+cw*u(i)+cw/2, y+px(15), strconv.Itoa(r.Round), fmt.Sprintf("round %d: %s", r.Round, oneLine(r.Decision)), "text-anchor", "middle")
	}
	c.text(x0+cw*u(len(a.Rounds))+px(8), y+px(15), "agreed")
	c.end()
	y += px(gridRowH)
	c.start("g", "class", "row grader")
	c.text(px(marginX), y+px(15), "grader", "font-weight", "bold")
	for i, r := range a.Rounds {
		fill, word := unsureFill, r.Grader
		switch r.Grader {
		case roundtable.GraderPass:
			fill = passFill
		case roundtable.GraderFail:
			fill = failFill
		}
		c.rect(x0+cw*u(i)+px(1), y+px(2), cw-px(2), px(gridRowH-4), fill, fmt.Sprintf("round %d: the grader says %s", r.Round, oneLine(word)),
			"class", "cell grader-"+token(word))
		if cw >= px(30) {
			c.text(x0+cw*u(i)+cw/2, y+px(16), clip(oneLine(word), 5), "text-anchor", "middle", "fill", "#ffffff", "font-size", strconv.Itoa(smallSize))
		}
	}
	c.end()
	for j, name := range a.Reviewers {
		y += px(gridRowH)
		c.start("g", "class", "row reviewer")
		c.text(px(marginX), y+px(15), clip(oneLine(name), 12), "font-weight", "bold")
		for i, r := range a.Rounds {
			cell := r.Cells[j]
			x := x0 + cw*u(i)
			c.rect(x+px(1), y+px(2), cw-px(2), px(gridRowH-4), callFill[cell.Call], cellTitle(r, cell), "class", "cell call-"+cell.Call+" read-"+token(cell.Reading))
			c.text(x+cw/2, y+px(16), glyph(cell), "text-anchor", "middle")
		}
		s := a.Scores[j]
		judged := s.Rounds - s.NoVerdict - s.GraderUnknown
		c.text(x0+cw*u(len(a.Rounds))+px(8), y+px(15), fmt.Sprintf("%d of %d", s.Agreed, judged))
		c.end()
	}
	c.legend(px(marginX), y+px(gridRowH+8), px(chartWidth-2*marginX), a.legend())
}

// glyph is a verdict in a cell: ✓ approved, ✗ blocked (with its number
// of blocking objections past one), – none.
func glyph(c Cell) string {
	switch c.Reading {
	case roundtable.ReadApproved:
		return "✓"
	case roundtable.ReadBlocked:
		if c.Blockers > 1 {
			return "✗" + strconv.Itoa(c.Blockers)
		}
		return "✗"
	}
	return "–"
}

func cellTitle(r AgreementRound, c Cell) string {
	read := c.Reading
	switch read {
	case "":
		read = "gave no verdict"
	case roundtable.ReadBlocked:
		read = "blocked (" + walkie.Count(c.Blockers, "blocking objection", "blocking objections") + ")"
	}
	why := map[string]string{
		CallRight:    "it was right",
		CallMissed:   "it missed what the hidden tests caught",
		CallDisputed: "the hidden tests passed: a bug they miss, or noise",
		CallUnknown:  "nothing to set it against",
	}[c.Call]
	return fmt.Sprintf("%s, round %d: %s; the grader says %s: %s", oneLine(c.Reviewer), r.Round, read, oneLine(r.Grader), why)
}

func (a *Agreement) legend() []legendItem {
	return []legendItem{
		{name: "✓ approved  ✗ blocked  – none"},
		{name: "right", fill: rightFill},
		{name: "approved, grader failed", fill: wrongFill},
		{name: "blocked, grader passed", fill: callFill[CallDisputed]},
		{name: "no verdict or grader", fill: unsureFill},
	}
}

func (a *Agreement) describe() string {
	s := fmt.Sprintf("%s: %s decided", a.ID, walkie.Count(len(a.Rounds), "round", "rounds"))
	for j, name := range a.Reviewers {
		sc := a.Scores[j]
		s += fmt.Sprintf("; %s agreed with the grader %d of %d times", name, sc.Agreed, sc.Rounds-sc.NoVerdict-sc.GraderUnknown)
	}
	return s + "."
}
