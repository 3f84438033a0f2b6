package review

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/walkie-sh/walkie/walkie"
	"github.com/walkie-sh/walkie/walkie/mdsafe"
)

// CommentMarker opens the pull-request comment. It is an HTML comment, so
// nobody sees it; a re-run finds its own earlier comment by it and edits
// that one instead of adding a second.
const CommentMarker = "<!-- walkie-review -->"

// maxCommentBytes keeps a comment under GitHub's limit of 65536
// characters, with room to spare.
const maxCommentBytes = 60000

// Markdown is the report as markdown: what the step summary shows, and
// report.md. Everything walkie did not write itself (paths, refs, agent
// names, reasons and details that quote agents or CLIs) goes through
// mdsafe, and what agents wrote is quoted: a turn or a file name cannot
// add a heading, mention people, embed images, HTML or links, or break
// the layout.
func Markdown(r *Result) string { return renderMarkdown(r, 4000) }

// Comment is the report as a pull-request comment: the marker, then the
// markdown, shortened to fit a comment. A run with a verdict (agreed or
// disagreed) says so on a hidden second line, which a later run reads.
// A run that could not review (failed, or found nothing to review) does
// not take the last verdict away: given the comment it replaces
// (earlier, "" for none), it keeps that comment's verdict whole and puts
// above it what happened this time.
func Comment(r *Result, earlier string) string {
	if !r.HasVerdict() {
		if kept, ok := KeptVerdict(earlier); ok {
			return keeping(r, kept)
		}
		return CommentMarker + "\n" + fitted(r, maxCommentBytes-len(CommentMarker)-1)
	}
	md := fitted(r, maxCommentBytes-len(CommentMarker)-verdictLineBytes)
	return CommentMarker + "\n" + verdictHead(r.Verdict, r.Head, len(md)) + md
}

// HasVerdict reports whether the review reached a verdict on the design
// (agreed or disagreed), which its comment then shows until the next one.
func (r *Result) HasVerdict() bool {
	return r.Verdict == VerdictAgreed || r.Verdict == VerdictDisagreed
}

// fitted is the markdown shortened to room bytes: the final positions
// first, then cut.
func fitted(r *Result, room int) string {
	for _, limit := range []int{4000, 600, 0} {
		if s := renderMarkdown(r, limit); len(s) <= room {
			return s
		}
	}
	return clipText(renderMarkdown(r, 0), room-200) + "\n\n(The report is cut here to fit a comment: the whole of it is report.md in the job's artifact.)\n"
}

// verdictLine is a comment's second line when it shows a verdict: which,
// of the run at which commit, and how many bytes at the comment's end
// that verdict's report takes. A length, not an end marker: the report
// quotes a revision in a fenced block, where any text may stand.
var verdictLine = regexp.MustCompile(`\A` + regexp.QuoteMeta(CommentMarker) + `\n<!-- walkie-review:verdict (agreed|disagreed) ([0-9a-f]{7,64}) ([0-9]{1,6}) -->\n`)

// verdictLineBytes is room for the line at its longest.
const verdictLineBytes = 120

func verdictHead(verdict, head string, n int) string {
	if !isHex(head) || len(head) < 7 {
		return "" // not a commit: nothing a later run could name
	}
	return fmt.Sprintf("<!-- walkie-review:verdict %s %s %d -->\n", verdict, head, n)
}

// Kept is the verdict a comment shows: of the run at which commit, and
// that run's report.
type Kept struct {
	Verdict, Head, Markdown string
}

// KeptVerdict reads the verdict a comment of walkie review's shows; false
// when it shows none (its run failed with no verdict before it), or was
// changed since (a person edited it).
func KeptVerdict(comment string) (Kept, bool) {
	m := verdictLine.FindStringSubmatch(comment)
	if m == nil {
		return Kept{}, false
	}
	n, _ := strconv.Atoi(m[3])
	if n > len(comment)-len(m[0]) {
		return Kept{}, false
	}
	md := comment[len(comment)-n:]
	if !strings.HasPrefix(md, "## walkie review: ") {
		return Kept{}, false
	}
	return Kept{Verdict: m[1], Head: m[2], Markdown: md}, true
}

// keeping is the comment of a run without a verdict that keeps the last
// one: what happened this time, in a box, then the verdict as it was.
func keeping(r *Result, kept Kept) string {
	var b strings.Builder
	b.WriteString(CommentMarker + "\n" + verdictHead(kept.Verdict, kept.Head, len(kept.Markdown)))
	what := "could not finish (not a rejection)"
	box := "WARNING"
	if r.Verdict == VerdictNone {
		what, box = "found nothing to review", "NOTE"
	}
	fmt.Fprintf(&b, "> [!%s]\n> **The latest run, at commit %s, %s:** %s. The verdict below is of the run at commit %s; it stands until a run reaches one. This run's report is in the job's summary and artifact.\n",
		box, text(short(r.Head)), what, text(clipText(strings.TrimSuffix(r.Reason, "."), 2000)), text(short(kept.Head)))
	var failures []string
	for _, d := range r.Docs {
		for _, f := range d.Failures {
			failures = append(failures, clipText(f, 300))
		}
	}
	if len(failures) > 0 {
		b.WriteString(">\n> Attempts that failed: " + textList(failures, 5) + ".\n")
	}
	b.WriteString("\n")
	b.WriteString(kept.Markdown)
	return b.String()
}

// headline is the verdict as a person reads it first.
func headline(r *Result) string {
	switch r.Verdict {
	case VerdictAgreed:
		return "✅ agreed"
	case VerdictDisagreed:
		return "❌ not accepted"
	case VerdictNone:
		return "nothing to review"
	}
	return "⚠️ could not finish (not a rejection)"
}

// text is the one way outside text enters the report (and the briefing).
func text(s string) string { return mdsafe.Text(s) }

func renderMarkdown(r *Result, posLimit int) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## walkie review: %s\n\n", headline(r))
	p("**Verdict: %s.** %s.\n\n", text(r.Verdict), text(strings.TrimSuffix(r.Reason, ".")))
	if r.Verdict == VerdictFailed {
		p("The review stopped before the reviewers could finish, so it says nothing about the design: fix the cause below and run the job again.\n\n")
	}
	if len(r.Docs) > 0 {
		p("Reviewed by %s (%s, at most %s) at commit %s against %s, merge base %s; %s, %s.\n\n",
			text(andList(r.Agents)), text(r.Mode), walkie.Count(r.Docs[0].MaxRounds, "round", "rounds"), text(short(r.Head)), baseLabel(r), text(short(r.MergeBase)), walkie.Count(r.Rounds, "round", "rounds"), text(walkie.Money(r.CostUSD)))
	}
	for _, w := range r.Warnings {
		p("> [!WARNING]\n> %s\n\n", text(w))
	}
	for i := range r.Docs {
		renderDoc(&b, r, &r.Docs[i], posLimit)
	}
	if len(r.Reproduce) > 0 {
		p("<details><summary>Reproduce it locally</summary>\n\n%s\n</details>\n", mdsafe.Fenced("sh", strings.Join(r.Reproduce, "\n")))
	}
	return b.String()
}

func renderDoc(b *strings.Builder, r *Result, d *DocResult, posLimit int) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("### %s: %s\n\n%s.\n\n", text(d.Doc), text(d.Verdict), text(upperFirst(d.Reason)))
	renderParties(b, d)
	if len(d.Objections) > 0 {
		p("**Open objections**\n\n")
		for i, o := range d.Objections {
			where := ""
			if o.Line > 0 {
				where = " on " + lineLink(r, o)
			}
			item := fmt.Sprintf("%d. ", i+1)
			p("%s**%s**%s:\n\n%s\n", item, text(o.Agent), where, under(mdsafe.Quote(o.Text), len(item)))
		}
	} else if d.Verdict == VerdictDisagreed {
		p("No objection was written as an `Objection:` line; the final positions below say what stands.\n\n")
	}
	if d.Revision != "" {
		p("<details><summary>The implementer's revision</summary>\n\n%s\n</details>\n\n", mdsafe.Fenced("diff", clipText(d.Revision, max(posLimit, 1000)*4)))
	}
	if posLimit > 0 && hasPosition(d) {
		p("<details><summary>Final positions</summary>\n\n")
		for _, pt := range d.Parties {
			quoted := mdsafe.Quote(clipText(pt.Position, posLimit))
			if quoted == "" {
				continue
			}
			state := "did not sign off"
			switch {
			case pt.Role == "implementer":
				state = "implementer"
			case pt.Signed:
				state = "signed off"
			}
			p("**%s** (%s)\n\n%s\n", text(pt.Agent), state, quoted)
		}
		p("</details>\n\n")
	}
	if len(d.Failures) > 0 {
		p("<details><summary>Attempts that failed (%d)</summary>\n\n", len(d.Failures))
		for _, f := range d.Failures {
			p("- %s\n", text(f))
		}
		p("\n</details>\n\n")
	}
	if len(d.Discarded) > 0 {
		p("Changes the agents made in their copy of the repository, thrown away: %s.\n\n", textList(d.Discarded, 20))
	}
	if len(d.LeftOut) > 0 {
		p("Kept out of the agents' copy (agent CLI settings that could run commands): %s.\n\n", textList(d.LeftOut, 20))
	}
	verified := "verifies"
	if !d.Verified {
		verified = "does NOT verify: " + text(d.VerifyError)
	}
	budget := ""
	if d.BudgetUSD > 0 {
		budget = fmt.Sprintf(" of a %s budget", text(walkie.Money(d.BudgetUSD)))
	}
	p("Record %s, chain hash %s, %s; %s, %s%s.\n\n", text(d.ID+"/"+filepath.Base(d.Record)), text(d.ChainHash), verified, walkie.Count(d.Turns, "turn", "turns"), text(walkie.Money(d.CostUSD)), budget)
}

// renderParties is the table of who took part and how it ended for each.
func renderParties(b *strings.Builder, d *DocResult) {
	if len(d.Parties) == 0 {
		return
	}
	b.WriteString("| agent | role | signed off | turns | sessions | cost |\n|---|---|---|---|---|---|\n")
	for _, pt := range d.Parties {
		sessions, cost := 0, "$0"
		for _, c := range d.Costs {
			if c.Agent == pt.Agent {
				sessions += c.Sessions
				cost = walkie.Money(c.CostUSD)
				if c.Estimated > 0 {
					cost = "~" + cost
				}
			}
		}
		signed := "no"
		if pt.Signed {
			signed = "yes"
		}
		if pt.Role == "implementer" {
			signed = "—"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %s |\n", text(pt.Agent), text(pt.Role), signed, pt.Turns, sessions, text(cost))
	}
	b.WriteString("\n")
}

// baseLabel names the base as a person knows it: the pull request's
// branch when the base is its commit.
func baseLabel(r *Result) string {
	if pr := r.PullRequest; pr != nil && pr.BaseRef != "" && r.Base == pr.BaseSHA {
		return text(pr.BaseRef) + " at " + text(short(r.BaseSHA))
	}
	if r.Base == r.BaseSHA {
		return text(short(r.Base))
	}
	return text(r.Base) + " at " + text(short(r.BaseSHA))
}

func hasPosition(d *DocResult) bool {
	for _, pt := range d.Parties {
		if strings.TrimSpace(pt.Position) != "" {
			return true
		}
	}
	return false
}

// repoURL is what a pull request's address must look like for walkie to
// link into its repository: https, a host and owner/name.
var repoURL = regexp.MustCompile(`^https://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9._-]+){2,}$`)

// lineLink is a citation as a link to the line at the head commit when
// the repository's address is known.
func lineLink(r *Result, o Objection) string {
	label := fmt.Sprintf("%s:%d", o.File, o.Line)
	anchor := fmt.Sprintf("#L%d", o.Line)
	if o.EndLine > o.Line {
		label += fmt.Sprintf("-%d", o.EndLine)
		anchor += fmt.Sprintf("-L%d", o.EndLine)
	}
	if r.PullRequest == nil {
		return text(label)
	}
	repo, _, ok := strings.Cut(r.PullRequest.URL, "/pull/")
	if !ok || !repoURL.MatchString(repo) || !isHex(r.Head) {
		return text(label)
	}
	var segs []string
	for seg := range strings.SplitSeq(o.File, "/") {
		segs = append(segs, url.PathEscape(seg))
	}
	return fmt.Sprintf("[%s](%s/blob/%s/%s%s)", text(label), repo, r.Head, strings.Join(segs, "/"), anchor)
}

func isHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdef") == ""
}

// under puts each line of a block under a list item's marker of width n.
func under(block string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func textList(items []string, limit int) string {
	var out []string
	for i, s := range items {
		if i == limit {
			out = append(out, fmt.Sprintf("and %d more", len(items)-limit))
			break
		}
		out = append(out, text(s))
	}
	return strings.Join(out, ", ")
}

func andList(s []string) string {
	switch len(s) {
	case 0:
		return "nobody"
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// JSON is the report as indented JSON: report.json.
func JSON(r *Result) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ReportPaths are where WriteReports writes the whole review's report.
func ReportPaths(r *Result) (markdown, js string) {
	return filepath.Join(r.Out, "report.md"), filepath.Join(r.Out, "report.json")
}

// WriteReports writes the review's report into its output directory, and
// each document's beside its record. Each file is replaced whole, so a
// reader never sees half of one; writing them again (with the warnings
// publishing added) replaces them.
func WriteReports(r *Result) error {
	md, js := ReportPaths(r)
	if err := writeReport(md, js, r); err != nil {
		return err
	}
	for _, d := range r.Docs {
		if d.Record == "" {
			continue
		}
		one := *r
		one.Docs = []DocResult{d}
		one.summarize()
		dir := filepath.Dir(d.Record)
		if _, err := os.Stat(dir); err != nil {
			continue // never started
		}
		if err := writeReport(filepath.Join(dir, "report.md"), filepath.Join(dir, "report.json"), &one); err != nil {
			return err
		}
	}
	return nil
}

func writeReport(md, js string, r *Result) error {
	b, err := JSON(r)
	if err != nil {
		return err
	}
	if err := walkie.WriteFileAtomic(js, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", js, err)
	}
	if err := walkie.WriteFileAtomic(md, []byte(Markdown(r)), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", md, err)
	}
	return nil
}
