package roundtable

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/controller/engine"
)

// The quorum lever on recorded data. The strictness of the gate is the
// product: the same reviews that deadlock at a quorum of two may converge
// in round one at a quorum of one. A replay decides each recorded round
// again under another rule (a quorum, a subset of the reviewers), from the
// recorded verdicts and grader results alone, with the run's own rules
// (decide), and says where the run would have stopped and what it would
// have cost up to there. Nothing runs again, and nothing is invented:
//
//   - a round the replay would have gone on from, where the run stopped,
//     leads into rounds that were never run: the replay says so and stops;
//   - with a subset of the reviewers, the implementer's next prompt would
//     have lacked the objections of the others: once one of them blocked
//     in a round the replay goes on from, the later rounds are not what
//     that rule would have produced, so they count as unknown too.

// Replay is the recorded rounds decided under one rule.
type Replay struct {
	Quorum    int      `json:"quorum"`
	Reviewers []string `json:"reviewers"`
	// Recorded marks the rule the run itself used.
	Recorded bool `json:"recorded,omitempty"`
	// Round is where the replayed run stops; with Known false, the last
	// recorded round it can decide, after which it would have gone on.
	Round int `json:"round"`
	// Decision is converged, deadlocked, failed or max-rounds, or
	// "unknown" when it would have gone on past what was recorded.
	Decision string `json:"decision"`
	Known    bool   `json:"known"`
	// CostUSD and DurationMS are those of the sessions up to and with
	// Round (the phases included), of the reviewers that count.
	CostUSD    float64       `json:"cost_usd"`
	DurationMS int64         `json:"duration_ms"`
	Note       string        `json:"note"`
	Rounds     []ReplayRound `json:"rounds"`
}

// ReplayRound is one recorded round decided under the replayed rule.
type ReplayRound struct {
	Round     int    `json:"round"`
	Approvals int    `json:"approvals"`
	Decision  string `json:"decision"`
	Recorded  string `json:"recorded"` // the run's decision
}

// DecisionUnknown is a replay's decision when it would have gone on past
// the recorded rounds.
const DecisionUnknown = "unknown"

// Errors of a replay request.
var errReplay = errors.New("cannot replay")

// Replay decides the recorded rounds under quorum approvals of reviewers
// (nil: every reviewer of the round table) and adds the result to
// r.Replays. quorum 0 means every reviewer of the subset.
func (r *Report) Replay(quorum int, reviewers []string) (Replay, error) {
	if r.Mode != "roundtable" {
		return Replay{}, fmt.Errorf("%w: %s is a debate, and only a round table has a quorum", errReplay, r.File)
	}
	if reviewers == nil {
		reviewers = r.Reviewers
	}
	for i, name := range reviewers {
		switch {
		case !slices.Contains(r.Reviewers, name):
			return Replay{}, fmt.Errorf("%w: %q is not a reviewer of %s (its reviewers: %s)", errReplay, name, r.ID, strings.Join(r.Reviewers, ", "))
		case slices.Contains(reviewers[:i], name):
			return Replay{}, fmt.Errorf("%w: %q is named twice", errReplay, name)
		}
	}
	if len(reviewers) == 0 {
		return Replay{}, fmt.Errorf("%w: no reviewers named", errReplay)
	}
	if quorum == 0 {
		quorum = len(reviewers)
	}
	if quorum < 1 || quorum > len(reviewers) {
		return Replay{}, fmt.Errorf("%w: quorum %d is not between 1 and the %d reviewers named", errReplay, quorum, len(reviewers))
	}
	rp := replay(r, rule{quorum: quorum, reviewers: reviewers})
	r.Replays = append(r.Replays, rp)
	return rp, nil
}

// ReplayAll adds a replay for every quorum from 1 to the number of
// reviewers named (nil: all of them).
func (r *Report) ReplayAll(reviewers []string) error {
	n := len(reviewers)
	if reviewers == nil {
		n = len(r.Reviewers)
	}
	for k := 1; k <= n; k++ {
		if _, err := r.Replay(k, reviewers); err != nil {
			return err
		}
	}
	return nil
}

func replay(r *Report, u rule) Replay {
	rp := Replay{Quorum: u.quorum, Reviewers: u.reviewers,
		Recorded: u.quorum == r.Quorum && slices.Equal(u.reviewers, r.Reviewers)}
	if len(r.rounds) == 0 {
		rp.Decision, rp.Note = DecisionUnknown, "no round has been decided yet: there is nothing to replay"
		return rp
	}
	last := r.rounds[len(r.rounds)-1].Round
	for i := range r.rounds {
		rr := r.rounds[i]
		d := u.decide(&rr, u.history(r.rounds[:i+1]))
		rp.Rounds = append(rp.Rounds, ReplayRound{Round: rr.Round, Approvals: d.approvals, Decision: d.decision, Recorded: rr.Decision})
		rp.Round = rr.Round
		if d.decision != DecisionNextRound {
			rp.Decision, rp.Known = d.decision, true
			rp.Note = fmt.Sprintf("it would have stopped in round %d: %s", rr.Round, d.reason)
			break
		}
		if rr.Round >= r.MaxRounds {
			rp.Decision, rp.Known = DecisionMaxRounds, true
			rp.Note = fmt.Sprintf("it would have reached its round cap of %d", r.MaxRounds)
			break
		}
		if rr.Round == last {
			rp.Decision = DecisionUnknown
			rp.Note = fmt.Sprintf("it would have gone on to round %d, which the run never reached (it %s): what happens after round %d is unknown",
				rr.Round+1, runEnd(r, rr), rr.Round)
			break
		}
		if heard := excludedBlockers(&rr, u); len(heard) > 0 {
			rp.Decision = DecisionUnknown
			rp.Note = fmt.Sprintf("it would have gone on to round %d, but the recorded round %d answered objections of %s, who does not count under this rule: what happens after round %d is unknown",
				rr.Round+1, rr.Round+1, listWords(heard), rr.Round)
			break
		}
	}
	rp.CostUSD, rp.DurationMS = spentUpTo(r.recs, rp.Round, u)
	return rp
}

// runEnd says how the run left its last decided round.
func runEnd(r *Report, rr RoundResult) string {
	if rr.Decision == DecisionNextRound && r.Status == "open" {
		return "is still open there"
	}
	return "stopped there as " + r.Status
}

// excludedBlockers names the reviewers outside the rule who blocked in rr:
// their objections went into the implementer's next prompt.
func excludedBlockers(rr *RoundResult, u rule) []string {
	var out []string
	for _, rv := range rr.Reviews {
		if !u.counts(rv.Reviewer) && rv.Verdict != nil && len(rv.Verdict.Blockers()) > 0 {
			out = append(out, rv.Reviewer)
		}
	}
	return out
}

// spentUpTo is the cost and session time of the sessions up to and with
// round: the phases, the implementer's turns and the counted reviewers'
// reviews. Time is each round's span (its first session's start to its
// last one's end) plus the phases' sessions: what the rounds took, without
// the waits between runs.
func spentUpTo(recs []engine.TurnRecord, round int, u rule) (float64, int64) {
	var cost float64
	var ms int64
	type span struct{ start, end time.Time }
	spans := map[int]*span{}
	for _, rec := range recs {
		if rec.Round > round || rec.Role == "reviewer" && !u.counts(rec.Agent) {
			continue
		}
		usd, _ := rec.Usage.Cost()
		cost += usd
		if rec.Round == 0 { // a phase
			ms += rec.DurationMS
			continue
		}
		s := spans[rec.Round]
		if s == nil {
			s = &span{rec.Started, rec.Ended}
			spans[rec.Round] = s
		}
		if rec.Started.Before(s.start) {
			s.start = rec.Started
		}
		if rec.Ended.After(s.end) {
			s.end = rec.Ended
		}
	}
	for _, s := range spans {
		ms += s.end.Sub(s.start).Milliseconds()
	}
	return cost, ms
}
