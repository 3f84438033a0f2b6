package fleet

import (
	"bytes"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/charts"
	"github.com/walkie-sh/walkie/controller/trials"
	"github.com/walkie-sh/walkie/walkie"
)

// The page's pictures: a debate's timeline, a round table's verdicts
// against its grader and its quorum replay, a trials directory's
// histograms. They are server-rendered SVG (charts), inlined in the page:
// they need no script, and the stream swaps a timeline in like any other
// part.

// headOf is what a chart says of where the debate stands: the row's
// figures, which are the standing's (Fill).
func headOf(d Debate) charts.Head {
	h := charts.Head{ID: d.ID, Status: d.Status, Reason: d.Reason, Round: d.Round, RoundCap: d.MaxRounds,
		CostUSD: d.CostUSD, BudgetUSD: d.BudgetUSD}
	if r := d.Running; r != nil {
		h.Running = &charts.Running{Agent: r.Agent, Turn: r.Turn, Attempt: r.Attempt, Started: r.Started}
	}
	return h
}

// svg is a chart as HTML to inline. charts escapes every text it draws;
// what it writes is markup of its own alone.
func svg(ch charts.Chart) template.HTML {
	var b bytes.Buffer
	if err := ch.SVG(&b); err != nil {
		return template.HTML(`<p class="error">` + template.HTMLEscapeString(err.Error()) + `</p>`)
	}
	return template.HTML(b.String()) //nolint:gosec // written by encoding/xml, which escaped every text (charts)
}

// pictures draws the page's charts: the timeline always, a round table's
// grid and replay when it has decided a round.
func (p *Page) pictures(doc *walkie.Doc, recs []controller.TurnRecord, now time.Time) {
	p.timelineKey = runningKey(p.Debate.Running)
	p.Timeline = svg(charts.NewTimeline(headOf(p.Debate), doc, recs, now))
	if p.Report == nil {
		return
	}
	if a := charts.NewAgreement(p.Report); a != nil {
		p.Agreement = svg(a)
	}
	if len(p.Report.Reviewers) > 1 && len(p.Report.RoundList) > 0 {
		r := *p.Report // the replays are the page's, not the report's
		r.Replays = nil
		if err := r.ReplayAll(nil); err == nil {
			if q := charts.NewQuorum(&r); q != nil {
				p.Quorum = svg(q)
			}
		}
	}
}

// runningKey names the attempt a timeline drew as running: another
// attempt running (or none) is a timeline to draw again.
func runningKey(r *Running) string {
	if r == nil {
		return ""
	}
	return r.Agent + "/" + r.Started.UTC().Format(time.RFC3339Nano)
}

// TrialsDir is a directory of trials (walkie trials) whose copies the
// page lists.
type TrialsDir struct {
	Key    string // walkie.Key(Dir): the page's name for it
	Dir    string
	Source string // the id the copies were made of
	Files  []string
}

// trialsDirs are the trials directories the rows' debates are copies in,
// by directory.
func trialsDirs(rows []Debate) []TrialsDir {
	by := map[string]*TrialsDir{}
	var order []string
	for _, r := range rows {
		dir, n, ok := trials.CopyOf(r.File)
		if !ok {
			continue
		}
		t := by[dir]
		if t == nil {
			t = &TrialsDir{Key: walkie.Key(dir), Dir: dir, Source: strings.TrimSuffix(r.ID, "-"+strconv.Itoa(n))}
			by[dir] = t
			order = append(order, dir)
		}
		t.Files = append(t.Files, r.File)
	}
	slices.Sort(order)
	out := make([]TrialsDir, 0, len(order))
	for _, d := range order {
		out = append(out, *by[d])
	}
	return out
}

// trialsPage is what the trials template gets.
type trialsPage struct {
	Dir     TrialsDir
	Chart   template.HTML
	Summary template.HTML
}

// TrialsPage is GET /t/{key}: the distribution of a trials directory's
// copies that the page lists, drawn, with the summary under it.
func (s *Server) TrialsPage(w http.ResponseWriter, r *http.Request) {
	base := BaseOf(r.URL.Path)
	var dir *TrialsDir
	for _, t := range trialsDirs(s.o.Debates()) {
		if t.Key == r.PathValue("key") {
			dir = &t
			break
		}
	}
	if dir == nil {
		s.render(w, http.StatusNotFound, "missing", pageData{Title: "walkie: no such trials", Base: base,
			Message: "No trials directory of this name holds a debate on this page's list."})
		return
	}
	sum, err := trials.SummarizeCopies(dir.Dir, dir.Files)
	if err != nil {
		s.render(w, http.StatusOK, "missing", pageData{Title: "walkie: trials of " + dir.Source, Base: base, Message: err.Error()})
		return
	}
	var md bytes.Buffer
	sum.Markdown(&md)
	s.render(w, http.StatusOK, "trials", pageData{Title: "walkie: trials of " + dir.Source, Base: base, Now: s.o.Now(),
		Trials: &trialsPage{Dir: *dir, Chart: svg(charts.NewDistribution(sum)), Summary: Render(md.Bytes())}})
}
