package controller

import (
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

func TestMoney(t *testing.T) {
	for usd, want := range map[float64]string{
		0: "$0.00", 0.6: "$0.60", 0.0137: "$0.0137", 0.0009: "$0.0009", 0.00548: "$0.00548", 0.123456: "$0.1235",
		0.01: "$0.01", 0.000012346: "$0.00001235", 1: "$1.00", 12.345: "$12.35", 0.999999: "$1.00",
	} {
		if got := walkie.Money(usd); got != want {
			t.Errorf("walkie.Money(%v) = %s, want %s", usd, got, want)
		}
	}
}

// The budget rule in Next: known cost plus the estimate for the attempts
// of unknown cost against the budget, before any turn.
func TestNextBudget(t *testing.T) {
	doc, err := walkie.Parse("t.walkie.md", []byte("---\nwalkie: 1\nid: t\nparticipants: [a, b]\nmax_rounds: 5\nbriefing_sha256: "+strings.Repeat("0", 64)+"\nbudget_usd: 1\n---\n# Briefing\nx\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("", []byte("agents:\n  a: {command: [a]}\n  b: {command: [b]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		st      walkie.State
		over    bool
		why     string
		unknown float64 // what the decision counts the unknown attempts as
	}{
		{"under", walkie.State{CostUSD: 0.5, MaxCostUSD: 0.5}, false, "", 0},
		{"spent", walkie.State{CostUSD: 1}, true, "spent $1.00 of a $1.00 budget", 0},
		{"tiny", walkie.State{CostUSD: 1.0009}, true, "spent $1.00 of a $1.00 budget", 0},
		// Unknown attempts: each the costliest known one, at least $0.10.
		{"unknown at the floor", walkie.State{CostUSD: 0.05, MaxCostUSD: 0.05, UnknownCosts: 9}, false, "", 0.9},
		{"unknown at the floor, over", walkie.State{CostUSD: 0.05, MaxCostUSD: 0.05, UnknownCosts: 10}, true, "spent $0.05 of a $1.00 budget, counting 10 attempts of unknown cost as $0.10 each", 1},
		{"unknown as the costliest", walkie.State{CostUSD: 0.7, MaxCostUSD: 0.4, UnknownCosts: 1}, true, "counting 1 attempt of unknown cost as $0.40 each", 0.4},
		{"halted stays halted", walkie.State{Status: walkie.StatusHalted, CostUSD: 5, UnknownCosts: 2}, false, "", 0.2},
	} {
		d := Next(Look{Doc: doc, State: &c.st, Config: cfg})
		if over := d.Status == walkie.StatusOverBudget; over != c.over || c.over && (d.Why != c.why && !strings.Contains(d.Why, c.why) || !d.Record || d.Action != ActEnd) {
			t.Errorf("%s: %+v", c.name, d)
		}
		// The budget and its estimate are resolved once, in the decision,
		// for whoever shows them (the run's summary).
		if d.Budget != 1 || d.UnknownUSD < c.unknown-1e-9 || d.UnknownUSD > c.unknown+1e-9 {
			t.Errorf("%s: budget %v, unknown counted as %v, want %v", c.name, d.Budget, d.UnknownUSD, c.unknown)
		}
	}
	if each, all := UnknownEstimate(&walkie.State{UnknownCosts: 3}, 0); each != 0 || all != 0 {
		t.Error("no budget, no estimate")
	}
}

// Who plays the next turn: an agent runs; a person declared in the front
// matter or the config is waited for, even where an agent has the name
// (a live session answering by post); anyone else is undeclared, with the
// name most likely meant, and never waited for as if a person.
func TestNextParties(t *testing.T) {
	cfg, err := config.Parse("", []byte("agents:\n  ada: {command: [a]}\npeople:\n  frank: {telegram: 42}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, first, people string
		action              Action
		why                 string
		suggestion          string
	}{
		{"agent", "ada", "", ActRun, "turn 1 (round 1 of 5) is ada's", ""},
		{"person of the front matter", "alice", "people: [alice]\n", ActWait, "waiting for alice: walkie post t.walkie.md --from alice (turn 1; alice is a person)", ""},
		{"person of the config", "frank", "", ActWait, "waiting for frank: walkie post t.walkie.md --from frank (turn 1; frank is a person)", ""},
		{"declared person over an agent", "codex", "people: [codex]\n", ActWait, "waiting for codex: walkie post t.walkie.md --from codex (turn 1; codex is a person)", ""},
		{"misspelt agent", "adda", "", ActWait, `participant "adda" of t.walkie.md is neither an agent in the config nor a declared person (did you mean "ada"?)`, "ada"},
		{"misspelt person", "frnak", "", ActWait, `(did you mean "frank"?)`, "frank"},
		{"unknown", "nosuch", "", ActWait, "; agents and people here: ada, claude, codex, frank, gemini:", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "---\nwalkie: 1\nid: t\nparticipants: [" + c.first + ", b]\n" + c.people + "max_rounds: 5\nbriefing_sha256: " + strings.Repeat("0", 64) + "\n---\n# Briefing\nx\n"
			doc, err := walkie.Parse("t.walkie.md", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			d := Next(Look{Doc: doc, State: &walkie.State{}, Config: cfg})
			if d.Action != c.action || d.Participant != c.first || !strings.Contains(d.Why, c.why) {
				t.Errorf("%s: %q", d.Action, d.Why)
			}
			if undeclared := c.action == ActWait && !d.Person; undeclared != (d.Undeclared != nil) {
				t.Errorf("person %v, undeclared %v", d.Person, d.Undeclared)
			} else if d.Undeclared != nil && d.Undeclared.Suggestion != c.suggestion {
				t.Errorf("suggestion %q, want %q", d.Undeclared.Suggestion, c.suggestion)
			}
		})
	}
}

// The end of a one-round debate reads "its round cap of 1", never "the cap
// of 1 rounds".
func TestNextRoundCapWording(t *testing.T) {
	file, cfg := testDebate(t, 1, map[string]string{"a": "[a]", "b": "[b]"}, "a", "b")
	for _, who := range []string{"a", "b"} {
		if _, err := walkie.Append(file, walkie.Post{From: who, Body: []byte("A turn.\n")}); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	d := Next(Look{Doc: doc, State: loadState(t, file), Config: cfg})
	if d.Action != ActEnd || d.Status != walkie.StatusMaxRounds || d.Why != "reached its round cap of 1" {
		t.Errorf("%+v", d)
	}
}
