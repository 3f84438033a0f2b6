// Package chartstest writes recorded runs for the tests of the pictures
// (controller/charts, the fleet page's browser tests): a debate, a round
// table and a trials directory, every time stamp on a fixed clock, as the
// controller would have left them on disk.
package chartstest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// T0 is the fixed clock every recorded run here starts at.
var T0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

// At is min minutes and sec seconds after T0.
func At(min, sec int) time.Time {
	return T0.Add(time.Duration(min)*time.Minute + time.Duration(sec)*time.Second)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// attempt is one line of a turn log to write.
type attempt struct {
	turn, round, try int
	agent, role      string
	outcome          walkie.Outcome
	detail           string
	from, to         time.Time
	usd              float64
	signed           bool
}

func writeLog(t testing.TB, dir string, as []attempt) {
	t.Helper()
	for _, a := range as {
		rec := engine.TurnRecord{Turn: a.turn, Round: a.round, Agent: a.agent, Role: a.role, Attempt: max(a.try, 1), Started: a.from, Ended: a.to,
			DurationMS: a.to.Sub(a.from).Milliseconds(), Outcome: a.outcome, Detail: a.detail, Signed: a.signed}
		if a.role == "" {
			rec.Role = "participant"
		}
		if a.usd > 0 {
			rec.Usage = &engine.Usage{CostUSD: a.usd, CostSource: "reported"}
		}
		must(t, engine.AppendTurnLog(dir, rec))
	}
}

// SetState puts the cost the attempts had, and a status, into the
// debate's state.
func SetState(t testing.TB, file string, usd float64, status, reason string) {
	t.Helper()
	_, _, err := walkie.UpdateState(file, walkie.OpState, func(m *walkie.Meta, p walkie.Progress, s *walkie.State) error {
		s.CostUSD, s.Status, s.Reason = usd, status, reason
		return nil
	})
	must(t, err)
}

func post(t testing.TB, file, from string, when time.Time, sign bool) {
	t.Helper()
	_, err := walkie.Append(file, walkie.Post{From: from, Body: []byte("A turn by " + from + ".\n"), At: when, Sign: sign})
	must(t, err)
}

// Debate writes into dir a debate between two agents and a person, as it was
// recorded: claude's first attempt timed out and was retried, alice
// posted her turns by hand, claude stalled once in round 2, and every
// party signed in round 2. The budget is $1.
func Debate(t testing.TB, dir string) (file string, cfg *config.Config) {
	t.Helper()
	file = filepath.Join(dir, "api-shape.walkie.md")
	must(t, walkie.Init(file, walkie.InitOptions{ID: "api-shape", Participants: []string{"claude", "codex", "alice"}, MaxRounds: 4, Briefing: []byte("Pick the API's shape.\n")}))
	_, err := walkie.Approve(file)
	must(t, err)
	post(t, file, "claude", At(7, 30), false)
	post(t, file, "codex", At(10, 0), false)
	post(t, file, "alice", At(14, 0), false)
	post(t, file, "claude", At(20, 0), true)
	post(t, file, "codex", At(22, 0), true)
	post(t, file, "alice", At(25, 0), true)
	writeLog(t, walkie.StateDir(file, "api-shape"), []attempt{
		{turn: 1, round: 1, agent: "claude", outcome: walkie.OutcomeTimeout, detail: "no turn within 5m", from: At(0, 0), to: At(5, 0), usd: 0.05},
		{turn: 1, round: 1, try: 2, agent: "claude", outcome: walkie.OutcomeAccepted, from: At(5, 1), to: At(7, 30), usd: 0.08},
		{turn: 2, round: 1, agent: "codex", outcome: walkie.OutcomeAccepted, from: At(7, 31), to: At(10, 0), usd: 0.06},
		{turn: 4, round: 2, agent: "claude", outcome: walkie.OutcomeStalled, detail: "no output for 4m", from: At(14, 5), to: At(18, 5), usd: 0.02},
		{turn: 4, round: 2, try: 2, agent: "claude", outcome: walkie.OutcomeAccepted, from: At(18, 6), to: At(20, 0), usd: 0.07, signed: true},
		{turn: 5, round: 2, agent: "codex", outcome: walkie.OutcomeAccepted, from: At(20, 1), to: At(22, 0), usd: 0.05, signed: true},
	})
	SetState(t, file, 0.33, "", "")
	cfg = config.Default()
	cfg.BudgetUSD = 1
	return file, cfg
}

// Standing is the debate's standing at the fixed clock.
func Standing(t testing.TB, file string, cfg *config.Config, now time.Time) (*walkie.Doc, controller.Standing, []controller.TurnRecord) {
	t.Helper()
	d, err := walkie.Load(file)
	must(t, err)
	s, err := controller.ReadStanding(d, controller.StandingOptions{Config: cfg, Now: now})
	must(t, err)
	recs, err := controller.ReadTurnLog(walkie.StateDir(file, d.Meta.ID))
	must(t, err)
	return d, s, recs
}

// RoundTable writes into dir a round table of ada (implementer) with brook and
// cy reviewing at a quorum of 2, three rounds recorded: in round 1 the
// grader failed, brook blocked (right) and cy approved (a miss); in round
// 2 the grader passed, brook approved, cy blocked (disputed); in round 3
// both approved and it converged.
func RoundTable(t testing.TB, dir string) string {
	t.Helper()
	file := filepath.Join(dir, "parser.walkie.md")
	must(t, walkie.Init(file, walkie.InitOptions{ID: "parser", Mode: walkie.ModeRoundtable, Implementer: "ada", Reviewers: []string{"brook", "cy"}, Quorum: 2,
		Grader: walkie.Command{Shell: "make hidden-tests"}, Workspace: "work", MaxRounds: 4, Briefing: []byte("Write the parser.\n")}))
	_, err := walkie.Approve(file)
	must(t, err)
	sd := walkie.StateDir(file, "parser")
	var log []attempt
	usd := 0.0
	block := &roundtable.ReviewVerdict{Verdict: "request_changes", Objections: []roundtable.Objection{{Summary: "breaks on a newline", Rule: "§2", FailingInput: "\n", Blocking: true}}}
	approve := &roundtable.ReviewVerdict{Verdict: "approve", Objections: []roundtable.Objection{}, Approves: true}
	rounds := []struct {
		grader    string
		brook, cy *roundtable.ReviewVerdict
		decision  string
	}{
		{roundtable.GraderFail, block, approve, roundtable.DecisionNextRound},
		{roundtable.GraderPass, approve, block, roundtable.DecisionNextRound},
		{roundtable.GraderPass, approve, approve, roundtable.DecisionConverged},
	}
	for i, r := range rounds {
		n := i + 1
		start := At(10*i, 0)
		// The implementer's turn, then the reviewers' verdicts, in
		// parallel, recorded as turns of their own.
		post(t, file, "ada", start.Add(4*time.Minute), false)
		post(t, file, "brook", start.Add(7*time.Minute), false)
		post(t, file, "cy", start.Add(7*time.Minute+time.Second), false)
		log = append(log,
			attempt{turn: 3*n - 2, round: n, agent: "ada", role: "implementer", outcome: walkie.OutcomeAccepted, from: start, to: start.Add(4 * time.Minute), usd: 0.10},
			attempt{turn: 3*n - 1, round: n, agent: "brook", role: "reviewer", outcome: walkie.OutcomeAccepted, from: start.Add(4*time.Minute + time.Second), to: start.Add(7 * time.Minute), usd: 0.02},
			attempt{turn: 3 * n, round: n, agent: "cy", role: "reviewer", outcome: walkie.OutcomeAccepted, from: start.Add(4*time.Minute + time.Second), to: start.Add(6 * time.Minute), usd: 0.01})
		usd += 0.13
		ws := fmt.Sprintf("sha256:%064d", n)
		approvals := 0
		for _, v := range []*roundtable.ReviewVerdict{r.brook, r.cy} {
			if v.Approves {
				approvals++
			}
		}
		rr := roundtable.RoundResult{Round: n, Workspace: ws, Grader: &roundtable.GraderResult{Round: n, Command: "make hidden-tests", Workspace: ws, Status: r.grader,
			Started: start.Add(4 * time.Minute), Ended: start.Add(5 * time.Minute), DurationMS: 60000},
			Reviews: []roundtable.ReviewResult{
				{Round: n, Reviewer: "brook", Turn: 3*n - 1, Outcome: walkie.OutcomeAccepted, Verdict: r.brook},
				{Round: n, Reviewer: "cy", Turn: 3 * n, Outcome: walkie.OutcomeAccepted, Verdict: r.cy},
			},
			Approvals: approvals, Quorum: 2, Decision: r.decision, Applied: true, DecidedAt: start.Add(7 * time.Minute)}
		b, err := json.MarshalIndent(rr, "", "  ")
		must(t, err)
		p := filepath.Join(sd, "roundtable", fmt.Sprintf("round-%d", n), "round.json")
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, b, 0o644))
	}
	writeLog(t, sd, log)
	SetState(t, file, usd, walkie.StatusConverged, "round 3: the grader passed and 2 of 2 reviewers approved")
	return file
}

// Trials writes parent/eval.trials, a trials directory of five copies of one debate between
// a and b (cap 2 rounds): two converged in round 1, one in round 2, one
// reached the cap, one was halted in round 1.
func Trials(t testing.TB, parent string) string {
	t.Helper()
	dir := filepath.Join(parent, "eval.trials")
	type copyRun struct {
		turns   int
		signed  bool
		usd     float64
		halt    string
		attempt walkie.Outcome
	}
	runs := []copyRun{
		{turns: 2, signed: true, usd: 0.04},
		{turns: 2, signed: true, usd: 0.05},
		{turns: 4, signed: true, usd: 0.11},
		{turns: 4, usd: 0.19},
		{turns: 1, usd: 0.02, halt: "wrong question"},
	}
	for i, r := range runs {
		k := i + 1
		id := fmt.Sprintf("eval-%d", k)
		file := filepath.Join(dir, fmt.Sprint(k), id+".walkie.md")
		must(t, os.MkdirAll(filepath.Dir(file), 0o755))
		must(t, walkie.Init(file, walkie.InitOptions{ID: id, Participants: []string{"a", "b"}, MaxRounds: 2, Briefing: []byte("Decide.\n")}))
		_, err := walkie.Approve(file)
		must(t, err)
		var log []attempt
		for n := 1; n <= r.turns; n++ {
			who := []string{"a", "b"}[(n-1)%2]
			from, to := At(3*(n-1), 0), At(3*(n-1)+2, 0)
			sign := r.signed && n > r.turns-2
			post(t, file, who, to, sign)
			log = append(log, attempt{turn: n, round: (n + 1) / 2, agent: who, outcome: walkie.OutcomeAccepted, from: from, to: to, usd: r.usd / float64(r.turns), signed: sign})
		}
		writeLog(t, walkie.StateDir(file, id), log)
		status := ""
		if r.halt != "" {
			status = walkie.StatusHalted
		}
		SetState(t, file, r.usd, status, r.halt)
	}
	return dir
}
