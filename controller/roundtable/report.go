package roundtable

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// Report is what `walkie report` shows: how a run went, what it cost per
// agent, and, for a round table, each reviewer's verdicts against the
// grader's, so their real catch rate can be read.
type Report struct {
	File        string   `json:"file"`
	ID          string   `json:"id"`
	Mode        string   `json:"mode"`
	Status      string   `json:"status"`
	Reason      string   `json:"reason,omitempty"`
	Turns       int      `json:"turns"`
	Rounds      int      `json:"rounds"` // rounds decided (round table) or begun (debate)
	MaxRounds   int      `json:"max_rounds"`
	Implementer string   `json:"implementer,omitempty"`
	Reviewers   []string `json:"reviewers,omitempty"`
	Quorum      int      `json:"quorum,omitempty"`
	CostUSD     float64  `json:"cost_usd"`
	// DurationMS runs from the first session's start to the last one's
	// end (waits between runs included).
	DurationMS int64       `json:"duration_ms"`
	Agents     []AgentCost `json:"agents"`
	// Round-table only.
	Phases    []PhaseBrief    `json:"phases,omitempty"`
	RoundList []RoundBrief    `json:"round_list,omitempty"`
	Scores    []ReviewerScore `json:"reviewer_scores,omitempty"`
	Deadlock  *Deadlock       `json:"deadlock,omitempty"`
	// Replays are the recorded rounds decided under other rules, when
	// asked for (Replay).
	Replays []Replay `json:"replays,omitempty"`

	// What replays are made from.
	rounds []RoundResult
	recs   []engine.TurnRecord
}

// AgentCost is one agent's sessions and what they cost.
type AgentCost struct {
	Agent    string  `json:"agent"`
	Role     string  `json:"role"`
	Sessions int     `json:"sessions"`
	CostUSD  float64 `json:"cost_usd"`
	// Estimated counts sessions whose cost came from the pricing table,
	// Unknown those whose cost could not be told (counted as 0).
	Estimated int `json:"estimated,omitempty"`
	Unknown   int `json:"unknown,omitempty"`
	// The tokens its CLI reported over the sessions (cached: the part of
	// the input read from the provider's prompt cache), and the bytes
	// walkie sent in the sessions whose CLI reported none.
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	SentBytes         int64 `json:"sent_bytes,omitempty"`
}

// RoundBrief is one decided round.
type RoundBrief struct {
	Round     int               `json:"round"`
	Workspace string            `json:"workspace_sha256"`
	Grader    string            `json:"grader"`
	Verdicts  map[string]string `json:"verdicts"` // reviewer → approved, blocked, no-verdict
	Blockers  map[string]int    `json:"blockers"`
	Decision  string            `json:"decision"`
}

// Verdict readings in a RoundBrief.
const (
	ReadApproved  = "approved"
	ReadBlocked   = "blocked"
	ReadNoVerdict = "no-verdict"
)

// ReviewerScore sets one reviewer's verdicts against the grader's.
type ReviewerScore struct {
	Reviewer string `json:"reviewer"`
	Rounds   int    `json:"rounds"`
	// Agreed: approved when the grader passed, or blocked when it failed.
	Agreed int `json:"agreed"`
	// ApprovedGraderFailed: approved work the hidden tests failed (a miss).
	ApprovedGraderFailed int `json:"approved_grader_failed"`
	// BlockedGraderPassed: blocked work the hidden tests passed: a bug the
	// tests miss, or noise; the record's objection says which.
	BlockedGraderPassed int `json:"blocked_grader_passed"`
	NoVerdict           int `json:"no_verdict"`
	// GraderUnknown: the grader timed out or could not run.
	GraderUnknown int `json:"grader_unknown"`
	// Approved counts the rounds it approved (of Rounds - NoVerdict valid
	// verdicts).
	Approved int `json:"approved"`
	// Blocking counts its blocking objections: one per input it blocked
	// on, however many rounds in a row it kept blocking on it.
	Blocking int `json:"blocking"`
	// ConfirmedByGrader: the hidden grader failed while the objection
	// stood. ConfirmedByFix: the implementer changed the work, the
	// reviewer then stopped blocking on the input, and nobody blocked on
	// it again (nor was it the question of a deadlock). The rest stand
	// unconfirmed: noise, or a real bug nothing else caught.
	ConfirmedByGrader int `json:"confirmed_by_grader"`
	ConfirmedByFix    int `json:"confirmed_by_fix"`
}

// Head is what a report says of where the debate stands, as
// controller.Standing has it: the report adds the turn log and the round
// results, and works out no status of its own.
type Head struct {
	Status, Reason string
	RoundCap       int // the round cap it has, or held when it ended
	CostUSD        float64
}

// BuildReport reads the turn log and, for a round table, the round
// results of the debate d, under the head its standing gives.
func BuildReport(d *walkie.Doc, h Head) (*Report, error) {
	m := d.Meta
	file, dir := d.File, walkie.StateDir(d.File, m.ID)
	r := &Report{File: file, ID: m.ID, Mode: cmp.Or(m.Mode, walkie.ModeDebate), Status: h.Status, Reason: h.Reason,
		Turns: d.Progress().Turns, MaxRounds: h.RoundCap, CostUSD: h.CostUSD, Agents: []AgentCost{}}
	recs, err := engine.ReadTurnLog(dir)
	if err != nil {
		return nil, err
	}
	var first, last time.Time
	for _, rec := range recs {
		if first.IsZero() || rec.Started.Before(first) {
			first = rec.Started
		}
		if rec.Ended.After(last) {
			last = rec.Ended
		}
	}
	if !first.IsZero() && last.After(first) {
		r.DurationMS = last.Sub(first).Milliseconds()
	}
	// One line per agent and role: the planner that also reviews is two.
	type key struct{ agent, role string }
	byAgent := map[key]*AgentCost{}
	for _, rec := range recs {
		k := key{rec.Agent, rec.Role}
		a := byAgent[k]
		if a == nil {
			a = &AgentCost{Agent: rec.Agent, Role: rec.Role}
			byAgent[k] = a
		}
		a.Sessions++
		if u := rec.Usage; u.HasTokens() {
			a.InputTokens += u.InputTokens
			a.CachedInputTokens += u.CachedInputTokens
			a.OutputTokens += u.OutputTokens
		} else {
			a.SentBytes += rec.SentBytes // what was sent to a CLI that counts no tokens
		}
		switch {
		case !rec.Usage.Known():
			a.Unknown++
		case rec.Usage.Estimate():
			a.Estimated++
			a.CostUSD += rec.Usage.CostUSD
		default:
			a.CostUSD += rec.Usage.CostUSD
		}
	}
	// Phases first (they run first), then the participants in turn
	// order, then anyone else.
	rank := func(a *AgentCost) int {
		if i := slices.Index(walkie.PhaseKinds, a.Role); i >= 0 {
			return i
		}
		if i := slices.Index(m.Participants, a.Agent); i >= 0 {
			return len(walkie.PhaseKinds) + i
		}
		return len(walkie.PhaseKinds) + len(m.Participants)
	}
	all := slices.Collect(maps.Values(byAgent))
	slices.SortFunc(all, func(a, b *AgentCost) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.Agent, b.Agent), strings.Compare(a.Role, b.Role))
	})
	for _, a := range all {
		r.Agents = append(r.Agents, *a)
	}
	if !m.IsRoundtable() {
		r.Rounds = m.RoundOf(max(r.Turns, 1))
		if r.Turns == 0 {
			r.Rounds = 0
		}
		return r, nil
	}
	r.Implementer, r.Reviewers, r.Quorum = m.Implementer, m.Reviewers, m.QuorumNeeded()
	if r.Phases, err = phaseBriefs(d, dir); err != nil {
		return nil, err
	}
	scores := map[string]*ReviewerScore{}
	for _, name := range m.Reviewers {
		scores[name] = &ReviewerScore{Reviewer: name}
	}
	if r.rounds, err = readRounds(dir, -1); err != nil {
		return nil, err
	}
	r.recs = recs
	for _, rr := range r.rounds {
		n := rr.Round
		r.Rounds = n
		if rr.Deadlock != nil {
			r.Deadlock = rr.Deadlock
		}
		rb := RoundBrief{Round: n, Workspace: rr.Workspace, Grader: graderStatus(rr.Grader), Decision: rr.Decision,
			Verdicts: map[string]string{}, Blockers: map[string]int{}}
		for _, rv := range rr.Reviews {
			read := ReadNoVerdict
			switch {
			case rv.Verdict == nil:
			case rv.Verdict.Approves:
				read = ReadApproved
			default:
				read = ReadBlocked
				rb.Blockers[rv.Reviewer] = len(rv.Verdict.Blockers())
			}
			rb.Verdicts[rv.Reviewer] = read
			s := scores[rv.Reviewer]
			if s == nil {
				continue // no longer a reviewer of this file
			}
			s.Rounds++
			if read == ReadApproved {
				s.Approved++
			}
			g := graderStatus(rr.Grader)
			switch {
			case read == ReadNoVerdict:
				s.NoVerdict++
			case g != GraderPass && g != GraderFail:
				s.GraderUnknown++
			case (read == ReadApproved) == (g == GraderPass):
				s.Agreed++
			case read == ReadApproved:
				s.ApprovedGraderFailed++
			default:
				s.BlockedGraderPassed++
			}
		}
		r.RoundList = append(r.RoundList, rb)
	}
	for name, s := range scores {
		s.Blocking, s.ConfirmedByGrader, s.ConfirmedByFix = confirmations(r.rounds, name, r.Deadlock)
	}
	// The last round at the cap did not lead to another: it ended the run.
	if n := len(r.RoundList); n > 0 && r.RoundList[n-1].Decision == DecisionNextRound && r.Rounds >= r.MaxRounds {
		r.RoundList[n-1].Decision = DecisionMaxRounds
	}
	for _, name := range m.Reviewers {
		r.Scores = append(r.Scores, *scores[name])
	}
	return r, nil
}

// confirmations counts reviewer's blocking objections in rounds, and those
// a grader failure or a fix confirmed (see ReviewerScore). An objection is
// one input the reviewer blocked on in consecutive rounds of valid verdicts.
func confirmations(rounds []RoundResult, reviewer string, dl *Deadlock) (blocking, byGrader, byFix int) {
	contested := map[string]bool{}
	if dl != nil {
		for _, in := range dl.inputs() {
			contested[questionKey(in)] = true
		}
	}
	// keys[i] is what reviewer blocked on in rounds[i]; nil without a verdict.
	keys := make([]map[string]bool, len(rounds))
	anyone := make([]map[string]bool, len(rounds))
	for i, rr := range rounds {
		anyone[i] = map[string]bool{}
		for _, rv := range rr.Reviews {
			if rv.Verdict == nil {
				continue
			}
			ks := map[string]bool{}
			for _, o := range rv.Verdict.Blockers() {
				ks[questionKey(o.FailingInput)] = true
				anyone[i][questionKey(o.FailingInput)] = true
			}
			if rv.Reviewer == reviewer {
				keys[i] = ks
			}
		}
	}
	for i := range rounds {
		for k := range keys[i] {
			if i > 0 && keys[i-1] != nil && keys[i-1][k] {
				continue // the same objection, still standing
			}
			blocking++
			last, failed := i, false
			for j := i; j < len(rounds) && (keys[j] == nil || keys[j][k]); j++ {
				if keys[j] != nil {
					last = j
				}
				failed = failed || rounds[j].Grader != nil && rounds[j].Grader.Status == GraderFail
			}
			if failed {
				byGrader++
				continue
			}
			if fixed(rounds, keys, anyone, last, k) && !contested[k] {
				byFix++
			}
		}
	}
	return blocking, byGrader, byFix
}

// fixed reports whether the objection on k, standing until round index
// last, was met by a change that stuck: in the next round the reviewer
// gave, its valid verdict no longer blocks on k on changed work, and
// nobody blocks on k in any later round.
func fixed(rounds []RoundResult, keys, anyone []map[string]bool, last int, k string) bool {
	next := last + 1
	for next < len(rounds) && keys[next] == nil {
		next++
	}
	if next >= len(rounds) || keys[next][k] || rounds[next].Workspace == rounds[last].Workspace {
		return false
	}
	for j := next; j < len(rounds); j++ {
		if anyone[j][k] {
			return false
		}
	}
	return true
}
