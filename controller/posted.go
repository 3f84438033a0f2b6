package controller

import (
	"errors"
	"io/fs"
	"os"
	"slices"

	"github.com/walkie-sh/walkie/walkie"
)

// OutcomePosted marks, in the turn log as walkie log shows it, a turn no
// session walkie ran wrote: it was posted with walkie post, by a person
// or by an agent walkie did not start. It is no attempt's outcome: the
// turn log itself holds attempts only.
const OutcomePosted walkie.Outcome = "posted"

// PostedDetail says how a posted turn came, for show and log.
const PostedDetail = "posted with walkie post: no session walkie ran wrote it"

// PostedTurns are the seqs of d's turns that no session walkie ran wrote
// (see OutcomePosted), read from its state directory. Nil when the
// record has none beside it (a copy moved away): then nothing can be
// told.
func PostedTurns(d *walkie.Doc) (map[int]bool, error) {
	dir := walkie.StateDir(d.File, d.Meta.ID)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	recs, err := ReadTurnLog(dir)
	if err != nil {
		return nil, err
	}
	st, err := walkie.LoadState(dir)
	if err != nil {
		return nil, err
	}
	running := 0
	if st.Running != nil {
		running = st.Running.Turn
	}
	return Posted(d, recs, running), nil
}

// Posted are the seqs of d's turns that no session walkie ran wrote,
// told from its turn log recs: a turn a session wrote, or posted with
// walkie post while its attempt ran, has that attempt accepted there.
// runningTurn is the turn of the attempt the state names as begun (0:
// none): its entry is stamped just before its attempt is logged. show,
// log, the fleet page and the timeline all tell a person's turn by this.
func Posted(d *walkie.Doc, recs []TurnRecord, runningTurn int) map[int]bool {
	out := postedTurns(d, recs)
	for _, e := range d.Entries {
		if runningTurn > 0 && e.Kind == walkie.KindTurn && e.Turn == runningTurn {
			delete(out, e.Marker.Seq)
		}
	}
	return out
}

func postedTurns(d *walkie.Doc, recs []TurnRecord) map[int]bool {
	bySeq, byTurn := map[int]bool{}, map[int]bool{}
	for _, r := range recs {
		if r.Outcome != walkie.OutcomeAccepted {
			continue
		}
		if r.Seq > 0 {
			bySeq[r.Seq] = true
		} else {
			byTurn[r.Turn] = true // a record of before seqs were logged
		}
	}
	out := map[int]bool{}
	for _, e := range d.Entries {
		if e.Kind == walkie.KindTurn && !bySeq[e.Marker.Seq] && !byTurn[e.Turn] {
			out[e.Marker.Seq] = true
		}
	}
	return out
}

// WithPosts is the turn log as walkie log shows it: every attempt, and a
// line for each turn posted outside any session (OutcomePosted), at the
// time it was recorded.
func WithPosts(d *walkie.Doc, recs []TurnRecord) []TurnRecord {
	posted := postedTurns(d, recs)
	out := slices.Clone(recs)
	for _, e := range d.Entries {
		if !posted[e.Marker.Seq] {
			continue
		}
		out = append(out, TurnRecord{Seq: e.Marker.Seq, Turn: e.Turn, Round: d.Meta.RoundOf(e.Turn), Agent: e.Agent,
			Started: e.Marker.At, Ended: e.Marker.At, Outcome: OutcomePosted, Detail: PostedDetail, Signed: e.Signed(), Bytes: int64(len(e.Body))})
	}
	slices.SortStableFunc(out, func(a, b TurnRecord) int { return a.Started.Compare(b.Started) })
	return out
}
