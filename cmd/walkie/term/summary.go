package term

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// headline is "orders.walkie.md: converged after 6 turns in 3 rounds, $0.0080".
func headline(file string, d *walkie.Doc, sum controller.Summary, pal Palette) string {
	s := fmt.Sprintf("%s: %s after %s", Clean(file), pal.Status(sum.Status), walkie.Count(sum.Turns, "turn", "turns"))
	if d != nil && sum.Turns > 0 {
		s += " in " + walkie.Count(d.Meta.RoundOf(sum.Turns), "round", "rounds")
	}
	if sum.Reason != "" {
		s += ": " + Clean(sum.Reason)
	}
	if sum.CostUSD > 0 {
		s += ", " + Money(sum.CostUSD, estimatedRun(sum.Attempts))
	}
	if t := TotalTokens(sum.Attempts); t != "" {
		s += ", " + t
	}
	if sum.BudgetUSD > 0 { // without a budget, the cost line below says it
		if u := UnknownCosts(sum.UnknownCosts, sum.UnknownUSD, sum.BudgetUSD); u != "" {
			s += " " + u
		}
	}
	return s
}

func estimatedRun(recs []controller.TurnRecord) bool {
	for _, r := range recs {
		if r.Usage.Estimate() {
			return true
		}
	}
	return false
}

// End prints how a run ended, for the person who started it: the
// outcome; for a converged debate the agreed proposal (its last turn), for
// one that did not converge where each party stands, a line each; what
// it cost; and where the record is (record, its absolute path). d is nil
// when the record could not be read after the run.
func End(w io.Writer, r *Renderer, file, record string, d *walkie.Doc, sum controller.Summary) {
	fmt.Fprintln(w, headline(file, d, sum, r.pal))
	if d == nil {
		return
	}
	if agreed := Agreed(d); len(agreed) > 0 && sum.Status == walkie.StatusConverged {
		// The agreement is the turns that signed off, the last one
		// included: the first of them usually states the proposal as it
		// stands, the others accept it.
		fmt.Fprintf(w, "\n%s, signed off by %s:\n", r.pal.Green("Agreed"), Clean(AndList(d.Progress().Signed)))
		for _, e := range agreed {
			fmt.Fprint(w, "\n"+r.Entry(d, e))
		}
	} else if ps := Positions(d); len(ps) > 0 {
		fmt.Fprintf(w, "\n%s\n", r.pal.Bold("Where each party stands:"))
		wide := 0
		for _, p := range ps {
			wide = max(wide, len(Clean(p.Agent)))
		}
		for _, p := range ps {
			mark := " "
			if p.Signed {
				mark = r.pal.Green("✓")
			}
			head := fmt.Sprintf("  %-*s  turn %-3d %s", wide, Clean(p.Agent), p.Turn, mark)
			fmt.Fprintln(w, Fit(head+"  "+Clean(gist(p.Text)), r.width-1))
		}
	}
	if t := TotalCost(sum.Attempts); t != "" && strings.Contains(t, "unknown") {
		fmt.Fprintf(w, "\n%s (this run)\n", t)
	}
	fmt.Fprintf(w, "\nrecord: %s\n", Clean(record))
	fmt.Fprintf(w, "read it: walkie show %s · every attempt: walkie log %s\n", Clean(file), Clean(file))
}

// Where is the record's path for a reader in another directory.
func Where(file string) string {
	if abs, err := filepath.Abs(file); err == nil {
		return abs
	}
	return file
}

// gist is a turn in one line: its first line of text, markdown markers
// off.
func gist(body string) string {
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#>*-+ "))
		if line != "" && !strings.HasPrefix(line, "```") {
			return emphasis.Replace(strings.Join(strings.Fields(line), " "))
		}
	}
	return "(empty)"
}

// emphasis takes markdown's emphasis and code marks out of a line shown
// as text.
var emphasis = strings.NewReplacer("**", "", "__", "", "`", "")

// AndList is "ada", "ada and brook", "ada, brook and cy".
func AndList(names []string) string {
	switch len(names) {
	case 0:
		return "nobody"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// endJSON is `walkie auto --json`: the summary, where the record is, and
// each party's last turn.
type endJSON struct {
	File        string                  `json:"file"`
	Record      string                  `json:"record"`
	Status      string                  `json:"status"`
	Reason      string                  `json:"reason,omitempty"`
	Interrupted bool                    `json:"interrupted,omitempty"`
	Turns       int                     `json:"turns"`
	CostUSD     float64                 `json:"cost_usd"`
	Unknown     int                     `json:"unknown_costs,omitempty"`
	UnknownUSD  float64                 `json:"unknown_cost_estimate_usd,omitempty"`
	BudgetUSD   float64                 `json:"budget_usd,omitempty"`
	Waiting     string                  `json:"waiting,omitempty"`
	Agreed      []Position              `json:"agreed,omitempty"` // converged: the turns that signed off, the last one last
	Positions   []Position              `json:"positions"`        // each party's last turn
	Attempts    []controller.TurnRecord `json:"attempts"`
}

// EndJSON is End as one JSON object (walkie auto --json).
func EndJSON(w io.Writer, file string, d *walkie.Doc, sum controller.Summary) error {
	v := endJSON{File: file, Record: Where(file), Status: sum.Status, Reason: sum.Reason, Interrupted: sum.Interrupted,
		Turns: sum.Turns, CostUSD: sum.CostUSD, Unknown: sum.UnknownCosts, UnknownUSD: sum.UnknownUSD, BudgetUSD: sum.BudgetUSD, Waiting: sum.Waiting,
		Positions: []Position{}, Attempts: nonNil(sum.Attempts)}
	if d != nil {
		v.Positions = Positions(d)
		if sum.Status == walkie.StatusConverged {
			v.Agreed = agreedPositions(d)
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
