package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// A turn is an agent session's when its attempt is accepted in the turn
// log (by seq; by turn for records that have none); any other turn, a
// failed attempt's included, was posted outside a session.
func TestPostedTurns(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	turn := func(seq, n int, agent string) walkie.Entry {
		return walkie.Entry{Kind: walkie.KindTurn, Turn: n, Agent: agent, Marker: walkie.Marker{Seq: seq, Turn: n, Agent: agent, At: at.Add(time.Duration(seq) * time.Minute)}}
	}
	d := &walkie.Doc{Meta: walkie.Meta{Participants: []string{"ann", "bob"}, MaxRounds: 3}, Entries: []walkie.Entry{
		turn(1, 1, "ann"), turn(2, 2, "bob"), {Kind: walkie.KindSupervisor, Marker: walkie.Marker{Seq: 3}}, turn(4, 3, "ann"), turn(5, 4, "bob"),
	}}
	recs := []TurnRecord{
		{Seq: 1, Turn: 1, Agent: "ann", Attempt: 1, Outcome: walkie.OutcomeAccepted, Started: at},
		{Turn: 2, Agent: "bob", Attempt: 1, Outcome: walkie.OutcomeCrashed, Started: at.Add(time.Minute)},
		{Turn: 3, Agent: "ann", Attempt: 1, Outcome: walkie.OutcomeAccepted, Started: at.Add(3 * time.Minute)}, // before seqs were logged
	}
	got := postedTurns(d, recs)
	if want := map[int]bool{2: true, 5: true}; len(got) != len(want) || !got[2] || !got[5] {
		t.Errorf("posted %v, want seqs 2 and 5", got)
	}
	view := WithPosts(d, recs)
	var order []string
	for _, r := range view {
		order = append(order, string(r.Outcome))
	}
	if want := []string{"accepted", "crashed", "posted", "accepted", "posted"}; !slices.Equal(order, want) {
		t.Errorf("log view %v, want %v", order, want)
	}
	if p := view[2]; p.Turn != 2 || p.Agent != "bob" || p.Round != 1 || p.Detail != PostedDetail || p.Attempt != 0 {
		t.Errorf("the posted line: %+v", p)
	}
}

// The turn of the attempt running now is stamped before its attempt is
// logged: it is the session's, not posted, in that window.
func TestPostedWhileItsAttemptRuns(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	d := &walkie.Doc{Meta: walkie.Meta{Participants: []string{"ann", "bob"}, MaxRounds: 3}, Entries: []walkie.Entry{
		{Kind: walkie.KindTurn, Turn: 1, Agent: "ann", Marker: walkie.Marker{Seq: 1, Turn: 1, Agent: "ann", At: at}},
		{Kind: walkie.KindTurn, Turn: 2, Agent: "bob", Marker: walkie.Marker{Seq: 2, Turn: 2, Agent: "bob", At: at}},
	}}
	if got := Posted(d, nil, 2); len(got) != 1 || !got[1] {
		t.Errorf("posted %v with turn 2 running, want seq 1 only", got)
	}
	if got := Posted(d, nil, 0); len(got) != 2 {
		t.Errorf("posted %v with nothing running, want both", got)
	}
}
