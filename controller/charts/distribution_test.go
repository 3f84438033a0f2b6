package charts

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/walkie-sh/walkie/controller/trials"
	"github.com/walkie-sh/walkie/walkie"
)

// The trials directory's histograms, from the copies alone: three
// converged (two in round 1, one in 2), one reached the cap of 2, one was
// halted in round 1; the costs spread from $0.02 to $0.19.
func TestDistributionOfATrialsDirectory(t *testing.T) {
	s, err := trials.Summarize(trialsDir(t))
	must(t, err)
	d := NewDistribution(s)
	if want := []string{walkie.StatusConverged, walkie.StatusMaxRounds, walkie.StatusHalted}; !slices.Equal(d.Statuses, want) {
		t.Errorf("statuses %q, want %q", d.Statuses, want)
	}
	var b bytes.Buffer
	must(t, d.SVG(&b))
	golden(t, "trials.svg", b.Bytes())

	root := parseSVG(t, b.Bytes())
	bars := func(panel string) map[string]string {
		out := map[string]string{}
		for _, g := range root.all(classed("g", panel)) {
			for _, r := range g.all(classed("rect", "bar")) {
				label, _, _ := strings.Cut(r.title(), ":")
				out[label] += strings.TrimPrefix(strings.Fields(r.attrs["class"])[1], "status-") + " "
			}
		}
		return out
	}
	if got, want := bars("outcomes"), map[string]string{"converged": "converged ", "max-rounds": "max-rounds ", "halted": "halted "}; !mapsEqual(got, want) {
		t.Errorf("outcome bars %v, want %v", got, want)
	}
	// Rounds to the end: 1 (two converged, one halted), 2 (one converged,
	// one at the cap).
	if got, want := bars("rounds_to_the_end"), map[string]string{"1 round": "converged halted ", "2 rounds": "converged max-rounds "}; !mapsEqual(got, want) {
		t.Errorf("rounds bars %v, want %v", got, want)
	}
	// Cost in $0.05 steps: $0.02 (halted) and $0.04 under $0.05, $0.05,
	// $0.11, and $0.19 in the last.
	if got, want := bars("cost"), map[string]string{"$0.00–$0.05": "converged halted ", "$0.05–$0.10": "converged ", "$0.10–$0.15": "converged ", "$0.15–$0.20": "max-rounds "}; !mapsEqual(got, want) {
		t.Errorf("cost bars %v, want %v", got, want)
	}

	// And for a terminal: in colour, in Unicode without it, and as plain
	// ASCII text for a pipe.
	for _, tt := range []struct {
		name string
		o    TermOptions
	}{
		{"trials-colour.txt", TermOptions{Width: 80, Colour: true, Unicode: true}},
		{"trials-unicode.txt", TermOptions{Width: 80, Unicode: true}},
		{"trials-text.txt", TermOptions{Width: 80}},
		{"trials-narrow.txt", TermOptions{Width: 44}},
	} {
		var b bytes.Buffer
		must(t, d.Text(&b, tt.o))
		golden(t, tt.name, b.Bytes())
		checkTerm(t, tt.name, b.String(), tt.o)
	}
}

// checkTerm holds a terminal chart to its options: no line wider than
// its width, no escape sequence without colour, nothing but ASCII for a
// pipe.
func checkTerm(t *testing.T, name, out string, o TermOptions) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if w := ansi.StringWidth(line); w > o.width() {
			t.Errorf("%s: a line of %d columns, wider than %d: %q", name, w, o.width(), line)
		}
	}
	if !o.Colour && strings.Contains(out, "\x1b") {
		t.Errorf("%s: an escape sequence without colour:\n%q", name, out)
	}
	if o.Colour && !strings.Contains(out, "\x1b[32m") {
		t.Errorf("%s: no colour with colour on", name)
	}
	if !o.Unicode && !o.Colour {
		for _, r := range out {
			if r >= utf8.RuneSelf {
				t.Errorf("%s: %q is not ASCII", name, r)
				break
			}
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A page that lists some of a directory's copies summarises those alone;
// a file that is no copy of the directory is refused.
func TestSummarizeCopies(t *testing.T) {
	dir := trialsDir(t)
	files := []string{dir + "/4/eval-4.walkie.md", dir + "/1/eval-1.walkie.md"}
	s, err := trials.SummarizeCopies(dir, files)
	must(t, err)
	if len(s.Trials) != 2 || s.Trials[0].N != 1 || s.Trials[1].N != 4 {
		t.Errorf("summarised %+v, want trials 1 and 4", s.Trials)
	}
	if _, err := trials.SummarizeCopies(dir, []string{dir + "/../elsewhere.walkie.md"}); err == nil {
		t.Error("a file that is no copy was summarised")
	}
}
