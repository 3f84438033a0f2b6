package charts

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// The recorded debate's timeline: a strip per party in turn order, one
// bar per attempt coloured by its outcome (the timeout and the stall
// before their retries), alice's hand-posted turns as points, a diamond
// per sign-off, both rounds marked, the end marked converged, and the
// cost climbing under the $1 budget to the standing's $0.33.
func TestTimelineOfARecordedDebate(t *testing.T) {
	file, cfg := recordedDebate(t)
	d, s, recs := standingOf(t, file, cfg, at(40, 0))
	tl := NewTimeline(HeadOf(&s), d, recs, at(40, 0))
	var b bytes.Buffer
	must(t, tl.SVG(&b))
	golden(t, "debate.svg", b.Bytes())

	root := parseSVG(t, b.Bytes())
	var strips []string
	for _, g := range root.all(classed("g", "strip")) {
		strips = append(strips, g.kids[0].text)
	}
	if want := []string{"claude", "codex", "alice"}; !slices.Equal(strips, want) {
		t.Errorf("strips %q, want %q", strips, want)
	}
	bars := root.all(classed("rect", "attempt"))
	var got []string
	for _, r := range bars {
		got = append(got, strings.TrimPrefix(strings.Fields(r.attrs["class"])[1], "out-"))
	}
	if want := []string{"timeout", "accepted", "stalled", "accepted", "accepted", "accepted"}; !slices.Equal(got, want) {
		t.Errorf("bars %q, want %q", got, want)
	}
	// The timeout runs 0-5m of a 25m span over 380 units: 76 wide.
	if w := bars[0].attrs["width"]; w != "76" {
		t.Errorf("the timeout's bar is %s wide, want 76", w)
	}
	if ti := bars[0].title(); !strings.Contains(ti, "turn 1 · claude") || !strings.Contains(ti, "timeout") || !strings.Contains(ti, "no turn within 5m") || !strings.Contains(ti, "$0.05") {
		t.Errorf("the timeout's tooltip says %q", ti)
	}
	if ti := bars[1].title(); !strings.Contains(ti, "attempt 2") {
		t.Errorf("the retry's tooltip says %q", ti)
	}
	if n := len(root.all(classed("circle", "post"))); n != 2 {
		t.Errorf("%d posts drawn, want alice's 2", n)
	}
	var signs []string
	for _, p := range root.all(classed("polygon", "signoff")) {
		signs = append(signs, p.title())
	}
	if want := []string{"claude signed off in turn 4", "codex signed off in turn 5", "alice signed off in turn 6"}; !sameSet(signs, want) {
		t.Errorf("sign-offs %q, want %q", signs, want)
	}
	var rounds []string
	for _, r := range root.all(classed("g", "rounds")) {
		for _, k := range r.kids {
			if k.name == "text" {
				rounds = append(rounds, k.text)
			}
		}
	}
	if want := []string{"round 1", "round 2"}; !slices.Equal(rounds, want) {
		t.Errorf("round marks %q, want %q", rounds, want)
	}
	if ends := root.all(classed("line", "end")); len(ends) != 1 || ends[0].title() != "converged" {
		t.Errorf("the end mark: %d, want one saying converged", len(ends))
	}
	if e := root.all(classed("text", "ending")); len(e) != 1 || e[0].text != "converged" {
		t.Errorf("the heading does not say it converged: %v", e)
	}
	if n := len(root.all(classed("line", "budget"))); n != 1 {
		t.Errorf("%d budget lines, want 1", n)
	}
	text := allText(root)
	for _, want := range []string{"converged · round 2 of 4 · $0.33 of $1.00", "cost $0.33", "budget $1.00"} {
		if !strings.Contains(text, want) {
			t.Errorf("the chart does not say %q:\n%s", want, text)
		}
	}
}

// A figure of the standing is the standing's: the chart says the cost
// the state holds even where the turn log's own figures sum otherwise.
func TestTimelineTakesTheStandingsFigures(t *testing.T) {
	file, cfg := recordedDebate(t)
	setState(t, file, 0.5, walkie.StatusHalted, "enough")
	d, s, recs := standingOf(t, file, cfg, at(40, 0))
	var b bytes.Buffer
	must(t, NewTimeline(HeadOf(&s), d, recs, at(40, 0)).SVG(&b))
	text := allText(parseSVG(t, b.Bytes()))
	// The record has every sign-off, so the standing calls it converged
	// whatever the state says; the cost is the state's.
	for _, want := range []string{s.Status + " · round ", "$0.50 of $1.00", "cost $0.50"} {
		if !strings.Contains(text, want) {
			t.Errorf("the chart does not say %q:\n%s", want, text)
		}
	}
}

// An attempt running is a bar from its start to now, drawn as running;
// the chart grows with the clock that draws it.
func TestTimelineRunningAttempt(t *testing.T) {
	file, cfg := recordedDebate(t)
	d, s, recs := standingOf(t, file, cfg, at(40, 0))
	h := HeadOf(&s)
	h.Status = walkie.StatusOpen
	h.Running = &Running{Agent: "codex", Turn: 7, Attempt: 1, Started: at(26, 0)}
	for _, now := range []time.Time{at(27, 0), at(36, 0)} {
		tl := NewTimeline(h, d, recs, now)
		if !tl.End.Equal(now) {
			t.Errorf("drawn at %v the chart ends at %v", now, tl.End)
		}
		var b bytes.Buffer
		must(t, tl.SVG(&b))
		root := parseSVG(t, b.Bytes())
		run := root.all(classed("rect", "out-running"))
		if len(run) != 1 {
			t.Fatalf("%d running bars, want 1", len(run))
		}
		if want := "running for " + elapsed(now.Sub(at(26, 0))); !strings.Contains(run[0].title(), want) {
			t.Errorf("the running bar says %q, want %q", run[0].title(), want)
		}
		if n := len(root.all(classed("line", "end"))); n != 0 {
			t.Errorf("an open debate has %d end marks", n)
		}
	}
}

// A debate with no attempt and no post yet says so, and still parses.
func TestTimelineEmpty(t *testing.T) {
	d := &walkie.Doc{Meta: walkie.Meta{ID: "fresh", Participants: []string{"a", "b"}, MaxRounds: 3}}
	var b bytes.Buffer
	must(t, NewTimeline(Head{ID: "fresh", Status: walkie.StatusOpen, Round: 1, RoundCap: 3}, d, nil, t0).SVG(&b))
	root := parseSVG(t, b.Bytes())
	if !strings.Contains(allText(root), "no turn yet") {
		t.Errorf("an empty timeline does not say so:\n%s", b.String())
	}
	if n := len(root.all(classed("g", "strip"))); n != 2 {
		t.Errorf("%d strips, want the 2 parties", n)
	}
}

func allText(e *el) string {
	var b strings.Builder
	for _, t := range e.all(func(e *el) bool { return e.name == "text" }) {
		b.WriteString(t.text + "\n")
	}
	return b.String()
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
