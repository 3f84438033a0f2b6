package controller

import (
	"fmt"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// reading is how the turn's agent is told to read the record: the
// record's pieces by line and what is new since its own last turn, as
// the prompt's data. Only line numbers, turn numbers and counts come
// from the record, never its text.
type reading struct {
	pieces                              []config.PromptPiece
	ownTurn, newFrom, newFirst, newLast int
}

// readingFor plans agent's reading of d (walkie.Doc.Reading).
func readingFor(d *walkie.Doc, agent string) reading {
	r := d.Reading(agent, walkie.ReadPieceBytes)
	out := reading{ownTurn: r.OwnTurn, newFrom: r.NewFrom, newFirst: r.NewFirstTurn, newLast: r.NewLastTurn}
	for _, p := range r.Pieces {
		out.pieces = append(out.pieces, config.PromptPiece{From: p.From, To: p.To, What: pieceHolds(d, p)})
	}
	return out
}

// pieceHolds says what a piece's lines hold: "the briefing and turns
// 1-8", "turn 12 (part)", "a supervisor's note".
func pieceHolds(d *walkie.Doc, p walkie.ReadPiece) string {
	var what []string
	if p.First == 0 {
		what = append(what, "the briefing")
	}
	first, last, notes := 0, 0, 0
	for seq := max(p.First, 1); seq <= p.Last && seq <= len(d.Entries); seq++ {
		e := &d.Entries[seq-1]
		if e.Kind != walkie.KindTurn {
			notes++
			continue
		}
		if first == 0 {
			first = e.Turn
		}
		last = e.Turn
	}
	switch {
	case first == 0:
	case first == last:
		what = append(what, fmt.Sprintf("turn %d", first))
	default:
		what = append(what, fmt.Sprintf("turns %d-%d", first, last))
	}
	switch notes {
	case 0:
	case 1:
		what = append(what, "a supervisor's note")
	default:
		what = append(what, fmt.Sprintf("%d supervisor's notes", notes))
	}
	if len(what) == 0 {
		return "the end of the file"
	}
	s := what[0]
	for i, w := range what[1:] {
		if i == len(what)-2 {
			s += " and " + w
		} else {
			s += ", " + w
		}
	}
	if p.Part {
		s += ", in part"
	}
	return s
}

// fill puts the reading into a prompt's data.
func (r reading) fill(d *config.PromptData) {
	d.Pieces, d.OwnTurn, d.NewFrom, d.NewFirstTurn, d.NewLastTurn = r.pieces, r.ownTurn, r.newFrom, r.newFirst, r.newLast
}
