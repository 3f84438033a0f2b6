package charts

import (
	"slices"
	"strings"

	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// OutcomeRunning is the outcome a chart gives an attempt still running.
const OutcomeRunning = "running"

// outcomeFill is each outcome's colour: green for a turn that went in,
// warm colours for what a retry may cure, cold or dark ones for what needs
// a person. An outcome not named here (a log written by something else)
// is grey.
var outcomeFill = map[string]string{
	string(walkie.OutcomeAccepted):      "#2e7d32",
	OutcomeRunning:                      "#0a5fd6",
	string(walkie.OutcomeNoTurn):        "#9e9e9e",
	string(walkie.OutcomeTimeout):       "#ef6c00",
	string(walkie.OutcomeStalled):       "#f9a825",
	string(walkie.OutcomeMalformed):     "#8e24aa",
	string(walkie.OutcomeTampered):      "#4a148c",
	string(walkie.OutcomeCrashed):       "#c62828",
	string(walkie.OutcomeAuth):          "#ad1457",
	string(walkie.OutcomeBlockedPrompt): "#795548",
	string(walkie.OutcomeInterrupted):   "#607d8b",
	string(walkie.OutcomeHalted):        "#263238",
}

const otherFill = "#bdbdbd"

// colour is key's colour in m, grey for a name m does not know.
func colour(m map[string]string, key string) string {
	if f, ok := m[key]; ok {
		return f
	}
	return otherFill
}

func fillOf(outcome string) string { return colour(outcomeFill, outcome) }

// outcomeOrder is the legend's order: the record's own, running last.
func outcomeOrder(outcome string) int {
	if i := slices.Index(walkie.Outcomes, walkie.Outcome(outcome)); i >= 0 {
		return i
	}
	if outcome == OutcomeRunning {
		return len(walkie.Outcomes)
	}
	return len(walkie.Outcomes) + 1
}

// Colours of the other marks.
const (
	signFill   = "#1b5e20"
	budgetInk  = "#b3261e"
	costInk    = "#0a5fd6"
	postFill   = "#ffffff"
	endInk     = "#1d1d1f"
	rightFill  = "#c8e6c9" // a verdict that went the grader's way
	wrongFill  = "#ffcdd2" // one that did not
	unsureFill = "#eeeeee" // no verdict, or no grader result to set it against
	passFill   = "#2e7d32"
	failFill   = "#c62828"
)

// token makes s one safe word for a class name: what an agent wrote may
// name an outcome, and a class is no place for its spaces or quotes.
func token(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, s)
}

// statusFill colours how a debate ended (a trial's outcome).
var statusFill = map[string]string{
	walkie.StatusConverged:  "#2e7d32",
	walkie.StatusClosed:     "#2e7d32",
	walkie.StatusMaxRounds:  "#f9a825",
	walkie.StatusDeadlocked: "#8e24aa",
	walkie.StatusOverBudget: "#ad1457",
	walkie.StatusFailed:     "#c62828",
	walkie.StatusHalted:     "#263238",
	walkie.StatusOpen:       "#0a5fd6",
	// A replay that would have gone on past the recorded rounds.
	roundtable.DecisionUnknown: "#9e9e9e",
}

func statusColour(s string) string { return colour(statusFill, s) }

// statusOrder is the order statuses stack in: the ends first, then what
// has not ended.
var statusOrder = []string{walkie.StatusConverged, walkie.StatusClosed, walkie.StatusMaxRounds, walkie.StatusDeadlocked,
	walkie.StatusOverBudget, walkie.StatusFailed, walkie.StatusHalted, walkie.StatusOpen}

func statusRank(s string) int {
	if i := slices.Index(statusOrder, s); i >= 0 {
		return i
	}
	return len(statusOrder)
}
