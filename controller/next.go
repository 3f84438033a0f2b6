package controller

import (
	"fmt"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// Action is what should happen next in a debate.
type Action string

// The actions Next decides between.
const (
	// ActRun: start the next party's session (its agent is configured).
	ActRun Action = "run"
	// ActWait: nothing to run until the record or the state changes: the
	// next party has no command (a person, a live session that answers
	// with walkie post), or the briefing awaits approval.
	ActWait Action = "wait"
	// ActDebounce: the next party may still answer by itself; invoke it
	// at Until (the cron tick's rule, with Look.Debounce).
	ActDebounce Action = "debounce"
	// ActHeld: another controller is running the debate.
	ActHeld Action = "held"
	// ActEnd: the debate has ended; Status says how.
	ActEnd Action = "end"
)

// Look is everything Next looks at: the record, the control state and the
// configuration as read now, and what the caller knows besides.
type Look struct {
	Doc    *walkie.Doc
	State  *walkie.State
	Config *config.Config
	// Cast maps a participant to the configured agent that plays it; a
	// participant not in it is played by the agent of its own name.
	Cast map[string]string
	// MaxRounds, when positive, replaces the file's max_rounds.
	MaxRounds int
	Now       time.Time
	// Held: another controller holds the debate's run lock.
	Held bool
	// Debounce applies the next agent's debounce after the record last
	// moved (LastMove): a live party may be about to answer.
	Debounce bool
	LastMove time.Time
}

// Decision is what Next says should happen, and why.
type Decision struct {
	Action Action
	// Why says it in one line a person understands.
	Why string
	// Status is the debate's status, with this decision.
	Status string
	// Record is set when Status is newly decided here (the budget is
	// spent) and must be written to the state.
	Record bool
	// The next turn, for every action but ActEnd.
	Turn, Round, RoundCap int
	Participant           string
	// Agent plays the next turn (ActRun, ActDebounce, ActHeld).
	Agent config.Agent
	// Person: the next turn is a person's (ActWait); walkie waits for
	// the post. Undeclared: the next participant is neither an agent nor
	// a person (ActWait), which no wait can mend.
	Person     bool
	Undeclared *UndeclaredError
	// Until is when a debounce ends.
	Until time.Time
	// Budget is the debate's budget in US dollars (its own, else the
	// config's); 0 is none.
	Budget float64
	// UnknownUSD is what the budget counts the attempts of unknown cost
	// as, all of them (UnknownEstimate); 0 without a budget.
	UnknownUSD float64
}

// Next is the one rule for what should happen now in a debate, shared by
// the loop, the daemon and the cron tick. It is pure: the same look gives
// the same decision, so a restart or a missed event changes nothing.
func Next(l Look) Decision {
	m := l.Doc.Meta
	if l.MaxRounds > 0 {
		m.MaxRounds = l.MaxRounds
	}
	p := l.Doc.Progress()
	st := l.State
	d := Decision{Turn: p.NextTurn, Round: p.NextRound, Participant: p.NextAgent, RoundCap: walkie.RoundCap(&m, st), Budget: budgetOf(&m, l.Config)}
	each, unknown := UnknownEstimate(st, d.Budget)
	d.UnknownUSD = unknown
	if budget := d.Budget; budget > 0 && st.Status == "" && !p.Converged {
		if st.CostUSD+unknown >= budget {
			d.Action, d.Status, d.Record = ActEnd, walkie.StatusOverBudget, true
			d.Why = fmt.Sprintf("spent %s of a %s budget", walkie.Money(st.CostUSD), walkie.Money(budget))
			if st.UnknownCosts > 0 {
				d.Why += fmt.Sprintf(", counting %s of unknown cost as %s each", walkie.Count(st.UnknownCosts, "attempt", "attempts"), walkie.Money(each))
			}
			return d
		}
	}
	d.Status = walkie.DebateStatus(&m, p, st)
	switch {
	case d.Status == walkie.StatusMaxRounds:
		// The rounds it held: an extension ends with the debate, so the
		// cap it reached may be more than the cap it has now.
		d.Action, d.Why = ActEnd, fmt.Sprintf("reached its round cap of %d", walkie.CapHeld(&m, p, st))
		return d
	case d.Status == walkie.StatusClosed:
		d.Action, d.Why = ActEnd, l.Doc.ClosedWhy()
		return d
	case d.Status != walkie.StatusOpen:
		d.Action, d.Why = ActEnd, st.Reason
		return d
	case m.BriefingSHA256 == "":
		d.Action, d.Why = ActWait, "the briefing is not approved (walkie brief approve "+l.Doc.File+")"
		return d
	}
	if isPerson(&m, l.Config, p.NextAgent) {
		// A person, or a live session declared as one, is never
		// invoked: it answers with walkie post.
		d.Action, d.Person = ActWait, true
		d.Why = fmt.Sprintf("waiting for %s: walkie post %s --from %s (turn %d; %s is a person)", p.NextAgent, l.Doc.File, p.NextAgent, p.NextTurn, p.NextAgent)
		return d
	}
	a, err := agentFor(l.Config, l.Cast, p.NextAgent)
	if err != nil {
		// Neither an agent nor a person: a misspelt agent, most likely.
		// Nothing comes of waiting for it; the run refuses it.
		u := undeclared(l.Doc.File, &m, l.Config, l.Cast, p.NextAgent)
		d.Action, d.Undeclared, d.Why = ActWait, u, u.Error()
		return d
	}
	d.Agent = a
	switch due := l.LastMove.Add(a.Debounce); {
	case l.Held:
		d.Action, d.Why = ActHeld, "another walkie controller is running this debate"
	case l.Debounce && l.Now.Before(due):
		d.Action, d.Until = ActDebounce, due
		d.Why = fmt.Sprintf("debounce: %s may still answer by itself; invoking it after %s", p.NextAgent, due.Local().Format(time.TimeOnly))
	default:
		d.Action, d.Why = ActRun, fmt.Sprintf("turn %d (round %d of %d) is %s's", p.NextTurn, p.NextRound, d.RoundCap, p.NextAgent)
	}
	return d
}

// UnknownShare is the least an attempt of unknown cost counts for
// against a budget, as a share of it: ten such attempts in a row spend it.
const UnknownShare = 0.1

// UnknownEstimate is what the budget assumes of the attempts whose cost is
// not known (their CLI reported nothing, was ended before it did, or runs
// a model the pricing table lacks): each counts as the costliest attempt of
// the debate whose cost is known, and at least UnknownShare of the budget,
// since a figure that errs low would let a debate run past its budget
// unseen. It returns the figure for each and for all of them.
func UnknownEstimate(st *walkie.State, budget float64) (each, all float64) {
	if budget <= 0 || st.UnknownCosts == 0 {
		return 0, 0
	}
	each = max(st.MaxCostUSD, budget*UnknownShare)
	return each, each * float64(st.UnknownCosts)
}

// budgetOf is the debate's budget: its own, else the config's; 0 = none.
func budgetOf(m *walkie.Meta, cfg *config.Config) float64 {
	if m.BudgetUSD > 0 {
		return m.BudgetUSD
	}
	return cfg.BudgetUSD
}

// agentFor is the configured agent that plays participant.
func agentFor(cfg *config.Config, cast map[string]string, participant string) (config.Agent, error) {
	name := participant
	if n, ok := cast[participant]; ok {
		name = n
	}
	a, err := cfg.Agent(name)
	if err != nil {
		return a, badInput(fmt.Errorf("participant %s: %w", participant, err))
	}
	return a, nil
}
