package charts

import (
	"cmp"
	"slices"
	"time"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// Head is what a chart says of where a debate stands: controller.Standing's
// figures (HeadOf), never worked out by the chart.
type Head struct {
	ID, Status, Reason string
	// Round is the next turn's round while the debate is open, else the
	// one it ended in; RoundCap the cap it has, or held when it ended.
	Round, RoundCap int
	CostUSD         float64
	BudgetUSD       float64 // 0: no budget
	UnknownCosts    int
	// Running is the attempt in progress, nil when none is.
	Running *Running
}

// Running is an attempt begun and not yet recorded.
type Running struct {
	Agent         string
	Turn, Attempt int
	Started       time.Time
}

// HeadOf is the chart's head from the debate's standing. An attempt the
// standing calls interrupted runs no more: it is not drawn as running.
func HeadOf(s *controller.Standing) Head {
	h := Head{ID: s.ID, Status: s.Status, Reason: s.Reason, Round: s.Round, RoundCap: s.RoundCap,
		CostUSD: s.CostUSD, BudgetUSD: s.BudgetUSD, UnknownCosts: s.UnknownCosts}
	if r := s.Running; r != nil && !r.Interrupted {
		h.Running = &Running{Agent: r.Agent, Turn: r.Turn, Attempt: r.Attempt, Started: r.Started}
	}
	return h
}

// Timeline is how a debate went in time: one strip per party, each
// attempt a bar from its start to its end, the turns posted by parties
// walkie does not run as points, the round boundaries, and the cost as
// it climbed.
type Timeline struct {
	Head
	// Start and End span every attempt and post (End is now for an
	// attempt still running); both zero when there is none.
	Start, End time.Time
	Strips     []Strip
	Rounds     []RoundStart
	// Cost is what the attempts had cost, in all, as each ended: the
	// turn log's figures. The head's CostUSD is what the chart says the
	// debate cost.
	Cost []CostStep
}

// Strip is one party's attempts and posts.
type Strip struct {
	Agent string
	Bars  []Bar
	Posts []Post
}

// Bar is one attempt.
type Bar struct {
	Turn, Round, Attempt int
	Role                 string
	Outcome              string // a walkie.Outcome, or OutcomeRunning
	Detail               string
	Start, End           time.Time
	CostUSD              float64
	CostKnown            bool
	Signed               bool
}

// Post is a turn walkie did not run: posted by a person or a live session
// with walkie post.
type Post struct {
	Turn, Round int
	At          time.Time
	Signed      bool
}

// RoundStart is where a round begins: its first attempt or post.
type RoundStart struct {
	Round int
	At    time.Time
}

// CostStep is the cost of every attempt ended by At.
type CostStep struct {
	At  time.Time
	USD float64
}

// NewTimeline is the timeline of the debate d whose standing gives h,
// from its turn log recs, drawn at now (the end of an attempt running).
func NewTimeline(h Head, d *walkie.Doc, recs []controller.TurnRecord, now time.Time) *Timeline {
	t := &Timeline{Head: h}
	strips := map[string]*Strip{}
	var order []string
	strip := func(agent string) *Strip {
		s := strips[agent]
		if s == nil {
			s = &Strip{Agent: agent}
			strips[agent] = s
			order = append(order, agent)
		}
		return s
	}
	m := d.Meta
	for _, a := range slices.Concat(m.Participants, []string{m.Implementer}, m.Reviewers) {
		if a != "" {
			strip(a)
		}
	}
	for _, r := range recs {
		b := Bar{Turn: r.Turn, Round: r.Round, Attempt: r.Attempt, Role: r.Role, Outcome: string(r.Outcome), Detail: r.Detail,
			Start: r.Started, End: r.Ended, Signed: r.Signed && r.Outcome == walkie.OutcomeAccepted}
		if r.Usage != nil {
			b.CostUSD, b.CostKnown = r.Usage.CostUSD, r.Usage.CostSource != "" && r.Usage.CostSource != "unknown"
		}
		if b.End.Before(b.Start) {
			b.End = b.Start
		}
		s := strip(r.Agent)
		s.Bars = append(s.Bars, b)
	}
	running := 0
	if r := h.Running; r != nil {
		running = r.Turn
		s := strip(r.Agent)
		s.Bars = append(s.Bars, Bar{Turn: r.Turn, Round: h.Round, Attempt: r.Attempt, Outcome: OutcomeRunning,
			Start: r.Started, End: later(now, r.Started)})
	}
	posted := controller.Posted(d, recs, running)
	for i := range d.Entries {
		e := &d.Entries[i]
		if !posted[e.Marker.Seq] || e.Marker.At.IsZero() {
			continue
		}
		s := strip(e.Agent)
		s.Posts = append(s.Posts, Post{Turn: e.Turn, Round: roundOf(&m, e.Turn), At: e.Marker.At, Signed: e.Signed()})
	}
	for _, a := range order {
		t.Strips = append(t.Strips, *strips[a])
	}
	t.span()
	t.rounds()
	t.costs(recs)
	return t
}

// roundOf is the round of a turn; 0 where turns have no rounds of
// their own (a round table's rounds are its controller's).
func roundOf(m *walkie.Meta, turn int) int {
	if len(m.Participants) == 0 || turn < 1 {
		return 0
	}
	return m.RoundOf(turn)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// span sets Start and End around every bar and post.
func (t *Timeline) span() {
	see := func(from, to time.Time) {
		if t.Start.IsZero() || from.Before(t.Start) {
			t.Start = from
		}
		if to.After(t.End) {
			t.End = to
		}
	}
	for _, s := range t.Strips {
		for _, b := range s.Bars {
			see(b.Start, b.End)
		}
		for _, p := range s.Posts {
			see(p.At, p.At)
		}
	}
}

// rounds finds where each round begins. Phases (round 0) come before
// round 1 and mark no boundary.
func (t *Timeline) rounds() {
	first := map[int]time.Time{}
	see := func(round int, at time.Time) {
		if f, ok := first[round]; round > 0 && (!ok || at.Before(f)) {
			first[round] = at
		}
	}
	for _, s := range t.Strips {
		for _, b := range s.Bars {
			see(b.Round, b.Start)
		}
		for _, p := range s.Posts {
			see(p.Round, p.At)
		}
	}
	for r, at := range first {
		t.Rounds = append(t.Rounds, RoundStart{Round: r, At: at})
	}
	slices.SortFunc(t.Rounds, func(a, b RoundStart) int { return cmp.Compare(a.Round, b.Round) })
}

// costs is the climb of the cost, attempt by attempt as they ended.
func (t *Timeline) costs(recs []controller.TurnRecord) {
	ended := slices.Clone(recs)
	slices.SortStableFunc(ended, func(a, b controller.TurnRecord) int { return a.Ended.Compare(b.Ended) })
	usd := 0.0
	for _, r := range ended {
		if r.Usage == nil || r.Usage.CostUSD <= 0 {
			continue
		}
		usd += r.Usage.CostUSD
		t.Cost = append(t.Cost, CostStep{At: r.Ended, USD: usd})
	}
}

// Attempts counts the bars, running ones included.
func (t *Timeline) Attempts() int {
	n := 0
	for _, s := range t.Strips {
		n += len(s.Bars)
	}
	return n
}

// Ended reports whether the debate has ended (or stopped): anything but
// open.
func (t *Timeline) Ended() bool { return t.Status != walkie.StatusOpen }
