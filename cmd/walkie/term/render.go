package term

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// Renderer shows a record for reading: each entry under a rule line that
// says who wrote it, when, in which round and whether it signs off, its
// markdown rendered for the terminal, the controller's markers left out.
type Renderer struct {
	md    mdTerm
	pal   Palette
	width int
	loc   *time.Location // times are shown in it
	// posted are the seqs of turns no session walkie ran wrote
	// (controller.PostedTurns): their rule line says so.
	posted map[int]bool
}

// MarkPosted tells the renderer which turns were posted outside any
// session walkie ran (by seq), so that a person's turn does not read as
// an agent's.
func (r *Renderer) MarkPosted(seqs map[int]bool) { r.posted = seqs }

// NewRenderer renders for a terminal of width columns, in colour when
// pal is on and as plain text that reads the same in a pipe when not.
func NewRenderer(pal Palette, width int, loc *time.Location) *Renderer {
	return &Renderer{md: mdTerm{pal: pal, width: width - 4}, pal: pal, width: width, loc: loc}
}

// markdown renders text two columns in from the left edge.
func (r *Renderer) markdown(text []byte) string {
	lines := strings.Split(r.md.render(text), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// rule is a line across the width with a title on it: "── title ────".
func (r *Renderer) rule(title string) string {
	title = Fit(title, r.width-4)
	n := max(2, r.width-ansi.StringWidth(title)-4)
	return r.pal.Dim("── ") + title + " " + r.pal.Dim(strings.Repeat("─", n))
}

// when is a marker's time as the reader's clock shows it.
func (r *Renderer) when(t time.Time) string {
	return t.In(r.loc).Format("2006-01-02 15:04 MST")
}

// Header is the debate at a glance, as its standing has it: its id,
// status, round and parties, and the attempt running or interrupted.
func (r *Renderer) Header(s *controller.Standing, d *walkie.Doc) string {
	var b strings.Builder
	parties := strings.Join(d.Meta.Participants, ", ")
	if d.Meta.IsRoundtable() {
		parties = fmt.Sprintf("implementer %s, reviewers %s", d.Meta.Implementer, strings.Join(d.Meta.Reviewers, ", "))
	}
	fmt.Fprintf(&b, "%s · %s · %s\n", r.pal.Bold(Clean(s.ID)), r.pal.Status(s.Status), Clean(parties))
	facts := []string{fmt.Sprintf("%s, %s of %d", walkie.Count(s.Turns, "turn", "turns"), RoundWord(s), s.RoundCap)}
	if s.Approved {
		facts = append(facts, "briefing approved (sha256 "+d.Meta.BriefingSHA256[:12]+")")
	} else {
		facts = append(facts, r.pal.Yellow("briefing not approved"))
	}
	if s.CostUSD > 0 {
		facts = append(facts, Money(s.CostUSD, false))
	}
	b.WriteString(r.pal.Dim(strings.Join(facts, " · ")) + "\n")
	if s.Reason != "" {
		b.WriteString(Clean(s.Reason) + "\n")
	}
	if line := RunningLine(s); line != "" {
		b.WriteString(r.pal.Dim(Clean(line)) + "\n")
	}
	return b.String()
}

// RunningLine says what runs the debate now: the attempt in progress and
// who runs it, or the attempt a controller that is gone left; "" when
// none is begun.
func RunningLine(s *controller.Standing) string {
	a := s.Running
	switch {
	case a == nil:
		return ""
	case a.Interrupted:
		return s.Waiting
	}
	line := fmt.Sprintf("turn %d · %s, attempt %d, running since %s", a.Turn, a.Agent, a.Attempt, a.Started.Format(time.RFC3339))
	if s.Controller != nil {
		line += " (" + s.Controller.String() + ")"
	}
	return line
}

// RoundWord is "round 2" of a running debate, "ended in round 1" of one
// that is over.
func RoundWord(s *controller.Standing) string {
	if s.Status == walkie.StatusOpen {
		return fmt.Sprintf("round %d", s.Round)
	}
	return fmt.Sprintf("ended in round %d", s.Round)
}

// Briefing is the briefing under its rule.
func (r *Renderer) Briefing(d *walkie.Doc) string {
	return r.rule(r.pal.Bold("Briefing")) + "\n\n" + r.markdown(d.Briefing)
}

// Entry is one entry under its rule: "── Turn 3 · codex · round 2 ·
// 2026-11-30 03:59 UTC · signed off ──".
func (r *Renderer) Entry(d *walkie.Doc, e *walkie.Entry) string {
	body := e.Body
	var title []string
	if e.Kind == walkie.KindSupervisor {
		title = []string{r.pal.Bold("Supervisor"), r.when(e.Marker.At)}
	} else {
		title = []string{r.pal.Bold(fmt.Sprintf("Turn %d · %s", e.Turn, Clean(e.Agent))), fmt.Sprintf("round %d", d.Meta.RoundOf(e.Turn)), r.when(e.Marker.At)}
		if r.posted[e.Marker.Seq] {
			// Short: at 80 columns the longer words pushed "signed off"
			// off the line.
			title = slices.Insert(title, 1, r.pal.Yellow("walkie post"))
		}
		if e.Signed() {
			title = append(title, r.pal.Green("signed off"))
			body, _ = walkie.SplitSignOff(body)
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
func (r *Renderer) tags(t walkie.Tags) string {
	kind := Clean(t.Kind())
	switch t.Verdict {
	case walkie.VerdictApprove:
		kind = r.pal.Green(kind)
	case walkie.VerdictChangesRequested:
		kind = r.pal.Yellow(kind)
	}
	if len(t.Refs) == 0 {
		return kind
	}
	refs := Clean(strings.Join(t.RefStrings(), ", "))
	if kind == "" {
		return refs
	}
	return kind + " · " + refs
}

// Palette is the renderer's palette.
func (r *Renderer) Palette() Palette { return r.pal }

// Record is the whole record for reading (walkie show): the header, the
// briefing, then every entry.
func (r *Renderer) Record(w io.Writer, s *controller.Standing, d *walkie.Doc) {
	fmt.Fprint(w, r.Header(s, d))
	fmt.Fprint(w, "\n"+r.Briefing(d))
	for i := range d.Entries {
		fmt.Fprint(w, "\n"+r.Entry(d, &d.Entries[i]))
	}
	if len(d.Entries) == 0 {
		fmt.Fprintln(w, "\n"+r.pal.Dim("no entries yet"))
	}
}
