// Package debateview is where a debate stands as the commands print it:
// its status and why, the round and the cap, whose turn is next, the
// sign-offs, the cost, the attempt running now, and each party's last
// position. It is computed from the record and its state, in the few
// functions below, and rendered by package term and the commands.
package debateview

import (
	"bytes"

	"github.com/walkie-sh/walkie/walkie"
)

// View is the status of a debate as `walkie status --json` prints it.
type View struct {
	File         string             `json:"file"`
	ID           string             `json:"id"`
	Status       string             `json:"status"`
	Reason       string             `json:"reason,omitempty"`
	Participants []string           `json:"participants"`
	Turns        int                `json:"turns"`
	Seq          int                `json:"seq"`
	NextTurn     int                `json:"next_turn,omitempty"`
	Whose        string             `json:"whose_turn,omitempty"`
	Round        int                `json:"round"`
	RoundCap     int                `json:"round_cap"`
	Signed       []string           `json:"signed"`
	Approved     bool               `json:"briefing_approved"`
	CostUSD      float64            `json:"cost_usd"`
	Running      *walkie.Attempt    `json:"running,omitempty"`
	LastEntry    *walkie.EntryBrief `json:"last_entry,omitempty"`
}

// Load is the status of the debate in file.
func Load(file string) (*View, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return nil, err
	}
	return Of(d)
}

// Of is the status of a loaded record, with its state.
func Of(d *walkie.Doc) (*View, error) {
	file := d.File
	st, err := walkie.LoadState(walkie.StateDir(file, d.Meta.ID))
	if err != nil {
		return nil, err
	}
	p := d.Progress()
	status := walkie.DebateStatus(&d.Meta, p, st)
	// The round of a running debate is the next turn's; of one that is
	// over, the last turn's: one converged in round 1 ended in round 1.
	held := walkie.CapHeld(&d.Meta, p, st)
	round := min(p.NextRound, held)
	if status != walkie.StatusOpen && p.Turns > 0 {
		round = d.Meta.RoundOf(p.Turns)
	}
	v := &View{File: file, ID: d.Meta.ID, Status: status, Reason: st.Reason,
		Participants: d.Meta.Participants, Turns: p.Turns, Seq: p.Seq, Round: round,
		RoundCap: held, Signed: p.Signed, Approved: d.Meta.BriefingSHA256 != "", CostUSD: st.CostUSD, Running: st.Running}
	if v.Signed == nil {
		v.Signed = []string{}
	}
	if v.Status == walkie.StatusOpen {
		v.NextTurn, v.Whose = p.NextTurn, p.NextAgent
	}
	if v.Status == walkie.StatusClosed {
		v.Reason = d.ClosedWhy()
	}
	if n := len(d.Entries); n > 0 {
		v.LastEntry = d.Entries[n-1].Brief()
	}
	return v, nil
}

// Running is what runs now: the activity.json of the controller that runs
// the debate (any form: auto, turn, serve, watch) in its state directory
// dir, or else the attempt the state names, without its activity, while
// the controller that began it is alive.
func Running(dir string, d *walkie.Doc, v *View) []walkie.SessionActivity {
	if a, err := walkie.ReadActivity(dir); err == nil && a != nil {
		return a.Sessions
	}
	if a := v.Running; a != nil && walkie.ProcessAlive(a.ControllerPID) {
		round := 0
		if len(d.Meta.Participants) > 0 {
			round = d.Meta.RoundOf(a.Turn)
		}
		return []walkie.SessionActivity{{Turn: a.Turn, Round: round, Agent: a.Agent, Attempt: a.Number, Started: a.Started}}
	}
	return nil
}

// Position is a party's last turn.
type Position struct {
	Agent  string `json:"agent"`
	Turn   int    `json:"turn"`
	Round  int    `json:"round"`
	Signed bool   `json:"signed"`
	Text   string `json:"text"` // the turn's body, its sign-off line left out
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
		p := Position{Agent: e.Agent, Turn: e.Turn, Round: d.Meta.RoundOf(e.Turn), Signed: e.Signed(), Text: string(WithoutSignOff(e.Body))}
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

// WithoutSignOff drops the closing "Signed-off-by:" line, which the rule
// line already tells.
func WithoutSignOff(body []byte) []byte {
	t := bytes.TrimRight(body, " \t\r\n")
	i := bytes.LastIndexByte(t, '\n')
	if !bytes.HasPrefix(bytes.TrimSpace(t[i+1:]), []byte("Signed-off-by:")) {
		return body
	}
	return t[:i+1]
}
