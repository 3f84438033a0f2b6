package charts

import (
	"bytes"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/controller/trials"
	"github.com/walkie-sh/walkie/walkie"
)

// What an agent can put into the files a chart is drawn from: its name
// in the turn log, a detail, a halt's reason, an outcome the log names,
// a reviewer's name, a replay's note. Each tries to close the element
// or attribute it lands in, or to smuggle a control character.
var hostile = []string{
	`<script>alert("name")</script>`,
	`"><svg onload=alert(1)>`,
	`' onmouseover='alert(2)`,
	"]]><x onload=1>&amp;\x01\x1b[31m",
	"line\nbreak</title><script>alert(3)</script>",
}

// allowed are the only elements and attributes a chart may hold.
var (
	allowedElements = map[string]bool{"svg": true, "title": true, "desc": true, "g": true, "rect": true, "line": true,
		"text": true, "polygon": true, "polyline": true, "circle": true}
	allowedAttrs = map[string]bool{"xmlns": true, "class": true, "viewBox": true, "width": true, "height": true, "role": true,
		"font-family": true, "font-size": true, "font-weight": true, "fill": true, "fill-opacity": true, "stroke": true,
		"stroke-width": true, "stroke-dasharray": true, "text-anchor": true, "x": true, "y": true, "x1": true, "y1": true,
		"x2": true, "y2": true, "cx": true, "cy": true, "r": true, "points": true}
)

// checkInert parses an SVG and fails on anything but the chart's own
// elements and attributes; it returns every text and attribute value.
func checkInert(t *testing.T, what string, doc []byte) string {
	t.Helper()
	root := parseSVG(t, doc)
	var all strings.Builder
	for _, e := range root.all(func(*el) bool { return true }) {
		if !allowedElements[e.name] {
			t.Errorf("%s: an element <%s> got in", what, e.name)
		}
		for k, v := range e.attrs {
			if !allowedAttrs[k] {
				t.Errorf("%s: an attribute %s=%q got into <%s>", what, k, v, e.name)
			}
			if k == "class" && strings.ContainsAny(v, `<>"'=&`) {
				t.Errorf("%s: a class holds markup: %q", what, v)
			}
			all.WriteString(v + "\n")
		}
		all.WriteString(e.text + "\n")
	}
	if bytes.Contains(doc, []byte("<script")) || bytes.Contains(doc, []byte("\x1b")) || bytes.Contains(doc, []byte("\x01")) {
		t.Errorf("%s: raw hostile bytes in the document:\n%s", what, doc)
	}
	return all.String()
}

// An agent's text never reaches an SVG unescaped: hostile names, details,
// reasons and outcomes in a timeline, a grid, a replay and a histogram
// come out as text, and the charts hold nothing but their own markup.
func TestHostileTextStaysText(t *testing.T) {
	for i, bad := range hostile {
		d := &walkie.Doc{Meta: walkie.Meta{ID: "x" + bad, Participants: []string{bad, "b"}, MaxRounds: 3}}
		recs := []controller.TurnRecord{
			{Turn: 1, Round: 1, Agent: bad, Role: bad, Attempt: 2, Started: at(0, 0), Ended: at(1, 0), Outcome: walkie.Outcome(bad), Detail: bad,
				Usage: &engine.Usage{CostUSD: 0.1, CostSource: "reported"}},
			{Turn: 2, Round: 2, Agent: "b", Attempt: 1, Started: at(1, 0), Ended: at(2, 0), Outcome: walkie.OutcomeAccepted, Signed: true},
		}
		h := Head{ID: bad, Status: walkie.StatusHalted, Reason: bad, Round: 2, RoundCap: 3, CostUSD: 0.1, BudgetUSD: 1,
			Running: &Running{Agent: bad, Turn: 3, Attempt: 1, Started: at(2, 0)}}
		var b bytes.Buffer
		must(t, NewTimeline(h, d, recs, at(3, 0)).SVG(&b))
		text := checkInert(t, "timeline", b.Bytes())
		// As text, with what XML cannot hold replaced.
		shown := strings.Map(func(r rune) rune {
			if r < 0x20 {
				return '\uFFFD'
			}
			return r
		}, oneLine(bad))
		if !strings.Contains(text, shown) {
			t.Errorf("case %d: the hostile text is not shown as text in the timeline:\n%s", i, text)
		}

		r := &roundtable.Report{ID: bad, Mode: walkie.ModeRoundtable, Status: bad, MaxRounds: 3, Quorum: 1, Reviewers: []string{bad, "c"},
			RoundList: []roundtable.RoundBrief{{Round: 1, Grader: bad, Decision: bad,
				Verdicts: map[string]string{bad: bad, "c": roundtable.ReadBlocked}, Blockers: map[string]int{"c": 2}}},
			Scores:  []roundtable.ReviewerScore{{Reviewer: bad, Rounds: 1}, {Reviewer: "c", Rounds: 1}},
			Replays: []roundtable.Replay{{Quorum: 1, Reviewers: []string{bad}, Round: 1, Decision: bad, Note: bad, CostUSD: 0.2}}}
		b.Reset()
		must(t, Stack(&b, bad, NewAgreement(r), NewQuorum(r)))
		checkInert(t, "grid and replay", b.Bytes())

		s := &trials.Summary{Source: bad, Trials: []trials.Trial{{N: 1, Status: bad, Rounds: 1, CostUSD: 0.1}, {N: 2, Status: "converged", Rounds: 2}},
			Outcomes: []trials.Count{{Value: bad, Trials: 1}, {Value: "converged", Trials: 1}}, Cost: trials.Stats{Max: 0.1}}
		dist := NewDistribution(s)
		b.Reset()
		must(t, dist.SVG(&b))
		checkInert(t, "distribution", b.Bytes())
		for _, o := range []TermOptions{{}, {Unicode: true}, {Unicode: true, Colour: true}} {
			b.Reset()
			must(t, dist.Text(&b, o))
			out := strings.ReplaceAll(b.String(), "\x1b[", "") // the chart's own colours
			if strings.ContainsAny(out, "\x01\x1b") {
				t.Errorf("case %d: a control character reached the terminal: %q", i, b.String())
			}
		}
	}
}
