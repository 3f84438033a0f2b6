package term

import (
	"bytes"

	"github.com/walkie-sh/walkie/walkie"
)

// Position is a party's last turn.
type Position struct {
	Agent  string `json:"agent"`
	Turn   int    `json:"turn"`
	Round  int    `json:"round"`
	Signed bool   `json:"signed"`
	Text   string `json:"text"` // the turn's body, its sign-off line left out
}

// positionOf is the turn e as a position.
func positionOf(d *walkie.Doc, e *walkie.Entry) Position {
	text, _ := walkie.SplitSignOff(e.Body)
	return Position{Agent: e.Agent, Turn: e.Turn, Round: d.Meta.RoundOf(e.Turn), Signed: e.Signed(), Text: string(text)}
}

// Positions is each party's last turn, in the order they first spoke.
func Positions(d *walkie.Doc) []Position {
	var out []Position
	at := map[string]int{}
	for i := range d.Entries {
		e := &d.Entries[i]
		if e.Kind != walkie.KindTurn {
			continue
		}
		p := positionOf(d, e)
		if j, ok := at[e.Agent]; ok {
			out[j] = p
			continue
		}
		at[e.Agent] = len(out)
		out = append(out, p)
	}
	return out
}

// Agreed are the signed turns that made the debate converge: one by each
// participant since the last unsigned turn, in order.
func Agreed(d *walkie.Doc) []*walkie.Entry {
	n := len(d.Progress().Signed)
	var out []*walkie.Entry
	for i := len(d.Entries) - 1; i >= 0 && len(out) < n; i-- {
		if e := &d.Entries[i]; e.Kind == walkie.KindTurn {
			out = append([]*walkie.Entry{e}, out...)
		}
	}
	return out
}

// agreedPositions are the Agreed turns as positions, their text trimmed.
func agreedPositions(d *walkie.Doc) []Position {
	var out []Position
	for _, e := range Agreed(d) {
		p := positionOf(d, e)
		p.Text = string(bytes.TrimSpace([]byte(p.Text)))
		out = append(out, p)
	}
	return out
}
