package trials

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// Trial is one copy as its own files tell it.
type Trial struct {
	N      int    `json:"n"`
	File   string `json:"file"`
	ID     string `json:"id"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Rounds int    `json:"rounds"` // decided (round table) or begun (debate)
	// ConvergedIn is the round it converged in; 0 when it did not.
	ConvergedIn int     `json:"converged_in,omitempty"`
	CostUSD     float64 `json:"cost_usd"`
	// DurationMS runs from its first session's start to its last one's end.
	DurationMS int64                      `json:"duration_ms"`
	Scores     []roundtable.ReviewerScore `json:"reviewer_scores,omitempty"`
}

// Summary is the distribution over every copy in a trials directory.
type Summary struct {
	Dir      string  `json:"dir"`
	Source   string  `json:"source"` // the id the copies were made of
	Trials   []Trial `json:"trials"`
	Outcomes []Count `json:"outcomes"` // most frequent first
	// Converged counts the trials that converged; RoundsToConverge and
	// ConvergedIn describe those.
	Converged        int             `json:"converged"`
	RoundsToConverge Stats           `json:"rounds_to_converge"`
	ConvergedIn      []Count         `json:"converged_in"` // by round, in order
	Cost             Stats           `json:"cost_usd"`
	Time             Stats           `json:"duration_ms"`
	Reviewers        []ReviewerStats `json:"reviewers,omitempty"`
}

// Count is how many trials had a value.
type Count struct {
	Value  string `json:"value"`
	Trials int    `json:"trials"`
}

// Stats describe a set of numbers.
type Stats struct {
	N      int     `json:"n"`
	Total  float64 `json:"total"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
}

// ReviewerStats set one reviewer's verdicts over every trial against the
// hidden grader's.
type ReviewerStats struct {
	Reviewer string `json:"reviewer"`
	Verdicts int    `json:"verdicts"` // valid ones
	Approved int    `json:"approved"`
	// Judged counts the verdicts given when the grader passed or failed;
	// Agreed those that went its way (approved a pass, blocked a fail).
	Judged            int `json:"judged"`
	Agreed            int `json:"agreed"`
	Blocking          int `json:"blocking"`
	ConfirmedByGrader int `json:"confirmed_by_grader"`
	ConfirmedByFix    int `json:"confirmed_by_fix"`
}

// Summarize reads every copy in dir (dir/K/ID-K.walkie.md) and computes
// the distribution: from the copies alone, so it can be made again at any
// time, and a copy run on by hand counts as it stands.
func Summarize(dir string) (*Summary, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	cs, err := copies(dir)
	if err != nil {
		return nil, err
	}
	return summarize(dir, cs)
}

// SummarizeCopies is the distribution over the copies named by files, of
// the trials directory dir (CopyOf): what a page that lists those copies
// shows, without reading what else dir may hold.
func SummarizeCopies(dir string, files []string) (*Summary, error) {
	var cs []aCopy
	for _, f := range files {
		d, n, ok := CopyOf(f)
		if !ok || d != dir {
			return nil, fmt.Errorf("%s is not a trial of %s (a trial is K/ID-K.walkie.md)", f, dir)
		}
		cs = append(cs, aCopy{n, f})
	}
	slices.SortFunc(cs, func(a, b aCopy) int { return a.n - b.n })
	return summarize(dir, cs)
}

// summarize reads the copies cs of the trials directory dir.
func summarize(dir string, cs []aCopy) (*Summary, error) {
	if len(cs) == 0 {
		return nil, fmt.Errorf("%s holds no trials (a trial is K/ID-K.walkie.md)", dir)
	}
	s := &Summary{Dir: dir}
	for _, c := range cs {
		t, err := loadTrial(c.file)
		if err != nil {
			return nil, fmt.Errorf("trial %d: %w", c.n, err)
		}
		t.N = c.n
		s.Trials = append(s.Trials, t)
	}
	s.Source = strings.TrimSuffix(s.Trials[0].ID, fmt.Sprintf("-%d", s.Trials[0].N))
	s.tally()
	return s, nil
}

// loadTrial reads one copy's report.
func loadTrial(file string) (Trial, error) {
	r, _, err := controller.LoadReport(file, controller.StandingOptions{})
	if err != nil {
		return Trial{}, err
	}
	t := Trial{File: file, ID: r.ID, Status: r.Status, Reason: r.Reason, Rounds: r.Rounds, CostUSD: r.CostUSD, DurationMS: r.DurationMS, Scores: r.Scores}
	if r.Status == walkie.StatusOpen {
		// Still open: the run stopped on an error, which the record
		// cannot hold (or it was never run, or runs now).
		if b, err := os.ReadFile(stoppedPath(file)); err == nil {
			t.Reason = "the run stopped: " + strings.TrimSpace(string(b))
		}
	}
	if r.Status == walkie.StatusConverged {
		t.ConvergedIn = r.Rounds
	}
	return t, nil
}

func (s *Summary) tally() {
	outcomes := map[string]int{}
	rounds := map[int]int{}
	var conv, cost, ms []float64
	byReviewer := map[string]*ReviewerStats{}
	var order []string
	for _, t := range s.Trials {
		outcomes[t.Status]++
		cost = append(cost, t.CostUSD)
		ms = append(ms, float64(t.DurationMS))
		if t.ConvergedIn > 0 {
			s.Converged++
			rounds[t.ConvergedIn]++
			conv = append(conv, float64(t.ConvergedIn))
		}
		for _, sc := range t.Scores {
			rs := byReviewer[sc.Reviewer]
			if rs == nil {
				rs = &ReviewerStats{Reviewer: sc.Reviewer}
				byReviewer[sc.Reviewer] = rs
				order = append(order, sc.Reviewer)
			}
			rs.Verdicts += sc.Rounds - sc.NoVerdict
			rs.Approved += sc.Approved
			rs.Judged += sc.Rounds - sc.NoVerdict - sc.GraderUnknown
			rs.Agreed += sc.Agreed
			rs.Blocking += sc.Blocking
			rs.ConfirmedByGrader += sc.ConfirmedByGrader
			rs.ConfirmedByFix += sc.ConfirmedByFix
		}
	}
	for v, n := range outcomes {
		s.Outcomes = append(s.Outcomes, Count{v, n})
	}
	slices.SortFunc(s.Outcomes, func(a, b Count) int { return cmp.Or(b.Trials-a.Trials, strings.Compare(a.Value, b.Value)) })
	for _, k := range slices.Sorted(maps.Keys(rounds)) {
		s.ConvergedIn = append(s.ConvergedIn, Count{fmt.Sprint(k), rounds[k]})
	}
	s.RoundsToConverge, s.Cost, s.Time = stats(conv), stats(cost), stats(ms)
	for _, name := range order {
		s.Reviewers = append(s.Reviewers, *byReviewer[name])
	}
}

func stats(xs []float64) Stats {
	st := Stats{N: len(xs)}
	if len(xs) == 0 {
		return st
	}
	xs = slices.Sorted(slices.Values(xs))
	st.Min, st.Max = xs[0], xs[len(xs)-1]
	for _, x := range xs {
		st.Total += x
	}
	st.Mean = st.Total / float64(len(xs))
	if n := len(xs); n%2 == 1 {
		st.Median = xs[n/2]
	} else {
		st.Median = (xs[n/2-1] + xs[n/2]) / 2
	}
	return st
}

// Markdown writes the summary for people: readable in a terminal, tables
// where markdown is rendered.
func (s *Summary) Markdown(w io.Writer) {
	fmt.Fprintf(w, "# Trials of %s: %d copies\n\n", s.Source, len(s.Trials))
	fmt.Fprintf(w, "Every figure is read from the copies' own files in %s; `walkie trials report` on it gives this again, and each copy is an ordinary record (walkie show, report, verify).\n", s.Dir)

	fmt.Fprintf(w, "\n## Outcomes\n\n| outcome | trials |\n|---|---|\n")
	for _, c := range s.Outcomes {
		fmt.Fprintf(w, "| %s | %d |\n", c.Value, c.Trials)
	}

	fmt.Fprintf(w, "\n## Rounds to converge\n\n")
	if s.Converged == 0 {
		fmt.Fprintf(w, "None of the %d converged.\n", len(s.Trials))
	} else {
		r := s.RoundsToConverge
		fmt.Fprintf(w, "%d of %d converged, in round %s at the earliest, %s at the median, %s at the latest.\n\n| converged in round | trials |\n|---|---|\n",
			s.Converged, len(s.Trials), num(r.Min), num(r.Median), num(r.Max))
		for _, c := range s.ConvergedIn {
			fmt.Fprintf(w, "| %s | %d |\n", c.Value, c.Trials)
		}
	}

	fmt.Fprintf(w, "\n## Cost and time\n\n| | total | least | median | mean | most |\n|---|---|---|---|---|---|\n")
	c, t := s.Cost, s.Time
	fmt.Fprintf(w, "| cost | %s | %s | %s | %s | %s |\n", walkie.Money(c.Total), walkie.Money(c.Min), walkie.Money(c.Median), walkie.Money(c.Mean), walkie.Money(c.Max))
	fmt.Fprintf(w, "| time | %s | %s | %s | %s | %s |\n", dur(t.Total), dur(t.Min), dur(t.Median), dur(t.Mean), dur(t.Max))
	fmt.Fprintf(w, "\nA trial's time runs from its first session's start to its last one's end.\n")

	if len(s.Reviewers) > 0 {
		fmt.Fprintf(w, "\n## Reviewers\n\n| reviewer | verdicts | approve rate | agreement with the grader | objections | confirmed by grader | confirmed by fix | unconfirmed |\n|---|---|---|---|---|---|---|---|\n")
		for _, r := range s.Reviewers {
			fmt.Fprintf(w, "| %s | %d | %s | %s | %d | %d | %d | %d |\n", r.Reviewer, r.Verdicts, rate(r.Approved, r.Verdicts), rate(r.Agreed, r.Judged),
				r.Blocking, r.ConfirmedByGrader, r.ConfirmedByFix, r.Blocking-r.ConfirmedByGrader-r.ConfirmedByFix)
		}
		fmt.Fprintf(w, "\nAgreement: approved when the hidden grader passed, or blocked when it failed, of the verdicts given when it did either. An objection (one input blocked on, however many rounds) is confirmed by the grader when it failed while the objection stood, by a fix when the reviewer stopped blocking on changed work and nobody raised the input again.\n")
	}

	fmt.Fprintf(w, "\n## Trials\n\n| trial | record | outcome | rounds | cost | time | why |\n|---|---|---|---|---|---|---|\n")
	for _, tr := range s.Trials {
		rel, err := filepath.Rel(s.Dir, tr.File)
		if err != nil {
			rel = tr.File
		}
		why := ""
		if tr.Status != walkie.StatusConverged {
			why = cell(tr.Reason)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %d | %s | %s | %s |\n", tr.N, rel, tr.Status, tr.Rounds, walkie.Money(tr.CostUSD), dur(float64(tr.DurationMS)), why)
	}
}

// cell is text in one table cell: one line, no pipe that would end it.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", "\\|")
}

func num(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", x), "0"), ".")
}

func dur(ms float64) string {
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func rate(n, of int) string {
	if of == 0 {
		return "—"
	}
	return fmt.Sprintf("%d%% (%d of %d)", (100*n+of/2)/of, n, of)
}
