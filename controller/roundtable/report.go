package roundtable

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// Report is what `walkie report` shows: how a run went, what it cost per
// agent, and, for a round table, each reviewer's verdicts against the
// grader's, so their real catch rate can be read.
type Report struct {
	File        string      `json:"file"`
	ID          string      `json:"id"`
	Mode        string      `json:"mode"`
	Status      string      `json:"status"`
	Reason      string      `json:"reason,omitempty"`
	Turns       int         `json:"turns"`
	Rounds      int         `json:"rounds"` // rounds decided (round table) or begun (debate)
	MaxRounds   int         `json:"max_rounds"`
	Implementer string      `json:"implementer,omitempty"`
	Reviewers   []string    `json:"reviewers,omitempty"`
	Quorum      int         `json:"quorum,omitempty"`
	CostUSD     float64     `json:"cost_usd"`
	Agents      []AgentCost `json:"agents"`
	// Round-table only.
	RoundList []RoundBrief    `json:"round_list,omitempty"`
	Scores    []ReviewerScore `json:"reviewer_scores,omitempty"`
	Deadlock  *Deadlock       `json:"deadlock,omitempty"`
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
}

// LoadReport reads a debate's record, state, turn log and, for a round
// table, its round results.
func LoadReport(file string) (*Report, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return nil, err
	}
	m := d.Meta
	dir := walkie.StateDir(file, m.ID)
	st, err := walkie.LoadState(dir)
	if err != nil {
		return nil, err
	}
	p := d.Progress()
	r := &Report{File: file, ID: m.ID, Mode: cmp.Or(m.Mode, walkie.ModeDebate), Status: walkie.DebateStatus(&m, p, st), Reason: st.Reason,
		Turns: p.Turns, MaxRounds: walkie.CapHeld(&m, p, st), CostUSD: st.CostUSD, Agents: []AgentCost{}}
	if r.Status == walkie.StatusMaxRounds && r.Reason == "" {
		r.Reason = fmt.Sprintf("reached the cap of %d rounds", r.MaxRounds)
	}
	recs, err := engine.ReadTurnLog(dir)
	if err != nil {
		return nil, err
	}
	byAgent := map[string]*AgentCost{}
	for _, rec := range recs {
		a := byAgent[rec.Agent]
		if a == nil {
			a = &AgentCost{Agent: rec.Agent, Role: rec.Role}
			byAgent[rec.Agent] = a
		}
		a.Sessions++
		switch {
		case rec.Usage == nil || strings.HasPrefix(rec.Usage.CostSource, "unknown"):
			a.Unknown++
		case strings.HasPrefix(rec.Usage.CostSource, "estimated"):
			a.Estimated++
			a.CostUSD += rec.Usage.CostUSD
		default:
			a.CostUSD += rec.Usage.CostUSD
		}
	}
	order := m.Participants
	for _, name := range slices.Sorted(maps.Keys(byAgent)) {
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	for _, name := range order {
		if a := byAgent[name]; a != nil {
			r.Agents = append(r.Agents, *a)
		}
	}
	if !m.IsRoundtable() {
		r.Rounds = m.RoundOf(max(p.Turns, 1))
		if p.Turns == 0 {
			r.Rounds = 0
		}
		return r, nil
	}
	r.Implementer, r.Reviewers, r.Quorum = m.Implementer, m.Reviewers, m.QuorumNeeded()
	scores := map[string]*ReviewerScore{}
	for _, name := range m.Reviewers {
		scores[name] = &ReviewerScore{Reviewer: name}
	}
	for n := 1; ; n++ {
		var rr RoundResult
		ok, err := readJSON(filepath.Join(dir, "roundtable", fmt.Sprintf("round-%d", n), "round.json"), &rr)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
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
	for _, name := range m.Reviewers {
		r.Scores = append(r.Scores, *scores[name])
	}
	return r, nil
}
