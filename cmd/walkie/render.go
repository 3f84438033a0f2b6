package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/walkie-sh/walkie/walkie"
)

// renderer shows a record for reading: each entry under a rule line that
// says who wrote it, when, in which round and whether it signs off, its
// markdown rendered for the terminal, the controller's markers left out.
type renderer struct {
	md    mdTerm
	pal   palette
	width int
	loc   *time.Location // times are shown in it
}

// newRenderer renders for a terminal of width columns, in colour when
// pal is on and as plain text that reads the same in a pipe when not.
func newRenderer(pal palette, width int, loc *time.Location) *renderer {
	return &renderer{md: mdTerm{pal: pal, width: width - 4}, pal: pal, width: width, loc: loc}
}

// markdown renders text two columns in from the left edge.
func (r *renderer) markdown(text []byte) string {
	lines := strings.Split(r.md.render(text), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// rule is a line across the width with a title on it: "── title ────".
func (r *renderer) rule(title string) string {
	title = fit(title, r.width-4)
	n := max(2, r.width-ansi.StringWidth(title)-4)
	return r.pal.dim("── ") + title + " " + r.pal.dim(strings.Repeat("─", n))
}

// when is a marker's time as the reader's clock shows it.
func (r *renderer) when(t time.Time) string {
	return t.In(r.loc).Format("2006-01-02 15:04 MST")
}

// header is the debate at a glance: its id, status, round and parties.
func (r *renderer) header(v *debateView, d *walkie.Doc) string {
	var b strings.Builder
	parties := strings.Join(d.Meta.Participants, ", ")
	if d.Meta.IsRoundtable() {
		parties = fmt.Sprintf("implementer %s, reviewers %s", d.Meta.Implementer, strings.Join(d.Meta.Reviewers, ", "))
	}
	fmt.Fprintf(&b, "%s · %s · %s\n", r.pal.bold(v.ID), r.pal.status(v.Status), parties)
	facts := []string{fmt.Sprintf("%s, %s of %d", walkie.Count(v.Turns, "turn", "turns"), roundWord(v), v.RoundCap)}
	if v.Approved {
		facts = append(facts, "briefing approved (sha256 "+d.Meta.BriefingSHA256[:12]+")")
	} else {
		facts = append(facts, r.pal.yellow("briefing not approved"))
	}
	if v.CostUSD > 0 {
		facts = append(facts, money(v.CostUSD, false))
	}
	b.WriteString(r.pal.dim(strings.Join(facts, " · ")) + "\n")
	if v.Reason != "" {
		b.WriteString(v.Reason + "\n")
	}
	return b.String()
}

// roundWord is "round 2" of a running debate, "ended in round 1" of one
// that is over.
func roundWord(v *debateView) string {
	if v.Status == walkie.StatusOpen {
		return fmt.Sprintf("round %d", v.Round)
	}
	return fmt.Sprintf("ended in round %d", v.Round)
}

// briefing is the briefing under its rule.
func (r *renderer) briefing(d *walkie.Doc) string {
	return r.rule(r.pal.bold("Briefing")) + "\n\n" + r.markdown(d.Briefing)
}

// entry is one entry under its rule: "── Turn 3 · codex · round 2 ·
// 2026-11-30 03:59 UTC · signed off ──".
func (r *renderer) entry(d *walkie.Doc, e *walkie.Entry) string {
	body := e.Body
	var title []string
	if e.Kind == walkie.KindSupervisor {
		title = []string{r.pal.bold("Supervisor"), r.when(e.Marker.At)}
	} else {
		title = []string{r.pal.bold(fmt.Sprintf("Turn %d · %s", e.Turn, e.Agent)), fmt.Sprintf("round %d", d.Meta.RoundOf(e.Turn)), r.when(e.Marker.At)}
		if e.Signed() {
			title = append(title, r.pal.green("signed off"))
			body = withoutSignOff(body)
		}
	}
	if t := e.Marker.Tags; !t.IsZero() {
		// The trailer lines are told on the rule line, right after who
		// wrote it, where a reader scanning a thread looks for them;
		// markdown would run them together into one paragraph.
		title = slices.Insert(title, 1, r.tags(t))
		body = []byte(e.Text() + "\n")
	}
	return r.rule(strings.Join(title, " · ")) + "\n\n" + r.markdown(body)
}

// tags is an entry's type and refs on its rule line: "verdict approve ·
// main@3f2a9c1".
func (r *renderer) tags(t walkie.Tags) string {
	kind := t.Kind()
	switch t.Verdict {
	case walkie.VerdictApprove:
		kind = r.pal.green(kind)
	case walkie.VerdictChangesRequested:
		kind = r.pal.yellow(kind)
	}
	if len(t.Refs) == 0 {
		return kind
	}
	if kind == "" {
		return strings.Join(t.RefStrings(), ", ")
	}
	return kind + " · " + strings.Join(t.RefStrings(), ", ")
}

// withoutSignOff drops the closing "Signed-off-by:" line, which the rule
// line already tells.
func withoutSignOff(body []byte) []byte {
	t := bytes.TrimRight(body, " \t\r\n")
	i := bytes.LastIndexByte(t, '\n')
	if !bytes.HasPrefix(bytes.TrimSpace(t[i+1:]), []byte("Signed-off-by:")) {
		return body
	}
	return t[:i+1]
}
