package walkie

// TurnAgent is the participant whose turn number turn is (round robin in
// the front matter's order; turns count from 1).
func (m *Meta) TurnAgent(turn int) string {
	return m.Participants[(turn-1)%len(m.Participants)]
}

// RoundOf is the round that turn number turn belongs to.
func (m *Meta) RoundOf(turn int) int {
	return (turn-1)/len(m.Participants) + 1
}

// TurnRef is what the turn-order rules need to know of a recorded turn.
type TurnRef struct {
	Turn   int
	Agent  string
	Signed bool
	Closed bool // the turn is of type close
}

// Progress is where a debate stands according to its record alone.
type Progress struct {
	Turns     int      // recorded turns
	Seq       int      // last recorded sequence number (turns and supervisor entries)
	Hash      string   // chain hash after the last entry
	NextTurn  int      // number of the next turn
	NextAgent string   // whose turn it is
	NextRound int      // round of the next turn
	Signed    []string // participants whose sign-off stands, in turn order
	Converged bool
	// Closed: the last turn is of type close (format 3), which ends the
	// thread as closed.
	Closed bool `json:",omitempty"`
}

// progress applies the sign-off rule to the recorded turns. Only the last
// len(participants) turns matter: the debate has converged when they are
// all signed, which under round robin is every participant signing after
// the last unsigned turn. A sign-off outside its author's own turn never
// reaches a TurnRef as signed (Entry.Signed checks the author). A round
// table has no sign-offs: its rules decide when the work is done, and its
// prompts tell the implementer not to sign, so a Signed-off-by line there
// is text like any other.
func progress(m *Meta, recent []TurnRef, turns, seq int, hash string) Progress {
	p := Progress{Turns: turns, Seq: seq, Hash: hash, NextTurn: turns + 1}
	p.NextAgent = m.TurnAgent(p.NextTurn)
	p.NextRound = m.RoundOf(p.NextTurn)
	// Nothing is posted after a close but supervisor entries, so the last
	// turn says whether the thread is closed.
	p.Closed = len(recent) > 0 && recent[len(recent)-1].Closed
	if m.IsRoundtable() {
		return p
	}
	for i := len(recent) - 1; i >= 0 && recent[i].Signed; i-- {
		p.Signed = append([]string{recent[i].Agent}, p.Signed...)
	}
	p.Converged = len(p.Signed) >= len(m.Participants)
	if p.Converged {
		p.Signed = p.Signed[len(p.Signed)-len(m.Participants):]
	}
	return p
}

// Progress applies the turn-order and sign-off rules to the whole record.
func (d *Doc) Progress() Progress {
	var recent []TurnRef
	turns := 0
	for i := range d.Entries {
		e := &d.Entries[i]
		if e.Kind != KindTurn {
			continue
		}
		turns++
		recent = append(recent, e.turnRef())
	}
	if n := len(d.Meta.Participants); len(recent) > n {
		recent = recent[len(recent)-n:]
	}
	return progress(&d.Meta, recent, turns, len(d.Entries), d.LastHash())
}

// turnRef is what the turn-order rules need of a recorded turn.
func (e *Entry) turnRef() TurnRef {
	return TurnRef{Turn: e.Turn, Agent: e.Agent, Signed: e.Signed(), Closed: e.Marker.Tags.Type == TypeClose}
}
