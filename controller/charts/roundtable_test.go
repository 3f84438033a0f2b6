package charts

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// The recorded round table as walkie report --svg draws it: its
// timeline, the grid of verdicts against the grader (brook right twice
// and disputed never, cy missing in round 1 and disputing in round 2),
// and the replay at quorums 1 and 2 (the run's).
func TestRoundTableCharts(t *testing.T) {
	file := recordedRoundTable(t)
	r, s, err := controller.LoadReport(file, controller.StandingOptions{Now: at(40, 0)})
	must(t, err)
	d, recs := mustLoad(t, file)
	var b bytes.Buffer
	must(t, Report(&b, r, &s, d, recs, at(40, 0)))
	golden(t, "roundtable.svg", b.Bytes())
	if len(r.Replays) != 0 {
		t.Errorf("drawing the report replayed it: %d replays in the report", len(r.Replays))
	}
	// Asked for no rule, the picture replays every quorum.
	all := *r
	must(t, all.ReplayAll(nil))

	root := parseSVG(t, b.Bytes())
	var parts []string
	for _, k := range root.kids {
		if k.name == "svg" {
			parts = append(parts, k.attrs["class"])
		}
	}
	if want := []string{"chart timeline", "chart agreement", "chart quorum"}; !slices.Equal(parts, want) {
		t.Fatalf("the stack holds %q, want %q", parts, want)
	}
	if n := len(root.all(classed("rect", "attempt"))); n != 9 {
		t.Errorf("%d attempts drawn, want 9 (3 rounds of ada, brook and cy)", n)
	}

	// The grid: per reviewer, each round's call in order.
	calls := map[string][]string{}
	for _, row := range root.all(classed("g", "reviewer")) {
		name := row.kids[0].text
		for _, c := range row.all(classed("rect", "cell")) {
			for _, f := range strings.Fields(c.attrs["class"]) {
				if v, ok := strings.CutPrefix(f, "call-"); ok {
					calls[name] = append(calls[name], v)
				}
			}
		}
	}
	if want := []string{CallRight, CallRight, CallRight}; !slices.Equal(calls["brook"], want) {
		t.Errorf("brook's calls %q, want %q", calls["brook"], want)
	}
	if want := []string{CallMissed, CallDisputed, CallRight}; !slices.Equal(calls["cy"], want) {
		t.Errorf("cy's calls %q, want %q", calls["cy"], want)
	}
	var grader []string
	for _, c := range root.all(classed("rect", "cell")) {
		if strings.Contains(c.attrs["class"], "grader-") {
			grader = append(grader, c.attrs["class"])
		}
	}
	if want := []string{"cell grader-fail", "cell grader-pass", "cell grader-pass"}; !slices.Equal(grader, want) {
		t.Errorf("the grader's row %q, want %q", grader, want)
	}
	text := allText(root)
	for _, want := range []string{"3 of 3", "1 of 3"} { // agreed, from the report's scores
		if !strings.Contains(text, want) {
			t.Errorf("the grid does not say %q:\n%s", want, text)
		}
	}

	// The replay: quorum 1 would have stopped a round sooner, quorum 2 is
	// the run's; each bar is the replay's own decision and cost.
	rules := root.all(classed("g", "rule"))
	if len(rules) != 2 {
		t.Fatalf("%d rules in the replay, want 2", len(rules))
	}
	if all.Replays[0].Round != 2 || all.Replays[1].Round != 3 {
		t.Errorf("the replay stops in rounds %d and %d, want 2 and 3", all.Replays[0].Round, all.Replays[1].Round)
	}
	for i, rp := range all.Replays {
		bar := rules[i].all(classed("rect", "rounds-bar"))
		if len(bar) != 1 || !strings.Contains(bar[0].attrs["class"], "decision-"+rp.Decision) {
			t.Errorf("rule %d: bar %v, want decision %s", i, bar, rp.Decision)
		}
		if !strings.Contains(allText(rules[i]), walkie.Money(rp.CostUSD)) {
			t.Errorf("rule %d does not say its cost %s", i, walkie.Money(rp.CostUSD))
		}
	}
	if !strings.Contains(allText(rules[1]), "the run's") {
		t.Errorf("the run's own rule is not marked:\n%s", allText(rules[1]))
	}

	// Replayed under one rule (walkie report --quorum 1), the picture
	// shows that rule alone.
	_, err = r.Replay(1, nil)
	must(t, err)
	b.Reset()
	must(t, Report(&b, r, &s, d, recs, at(40, 0)))
	if n := len(parseSVG(t, b.Bytes()).all(classed("g", "rule"))); n != 1 {
		t.Errorf("replayed at quorum 1, the picture shows %d rules", n)
	}
}

// A debate has no grid and no replay: the stack leaves them out.
func TestStackLeavesOutWhatADebateLacks(t *testing.T) {
	file, cfg := recordedDebate(t)
	r, s, err := controller.LoadReport(file, controller.StandingOptions{Config: cfg, Now: at(40, 0)})
	must(t, err)
	d, recs := mustLoad(t, file)
	if NewAgreement(r) != nil || NewQuorum(r) != nil {
		t.Fatal("a debate has a grid or a replay")
	}
	var b bytes.Buffer
	must(t, Report(&b, r, &s, d, recs, at(40, 0)))
	root := parseSVG(t, b.Bytes())
	if n := len(root.all(func(e *el) bool { return e.name == "svg" })); n != 2 {
		t.Errorf("%d svg elements, want the stack and its timeline", n)
	}
}

func mustLoad(t *testing.T, file string) (*walkie.Doc, []controller.TurnRecord) {
	t.Helper()
	d, err := walkie.Load(file)
	must(t, err)
	recs, err := controller.ReadTurnLog(walkie.StateDir(file, d.Meta.ID))
	must(t, err)
	return d, recs
}
