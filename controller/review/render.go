package review

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/walkie-sh/walkie/walkie"
)

// CommentMarker opens the pull-request comment. It is an HTML comment, so
// nobody sees it; a re-run finds its own earlier comment by it and edits
// that one instead of adding a second.
const CommentMarker = "<!-- walkie-review -->"

// maxCommentBytes keeps a comment under GitHub's limit of 65536
// characters, with room to spare.
const maxCommentBytes = 60000

// Markdown is the report as markdown: what the step summary shows, and
// report.md. Everything an agent wrote is shown inert (in code spans and
// fenced blocks): a turn cannot mention people, embed images or HTML, or
// break the layout.
func Markdown(r *Result) string { return renderMarkdown(r, 4000) }

// Comment is the report as a pull-request comment: the marker, then the
// markdown, shortened to fit a comment.
func Comment(r *Result) string {
	for _, limit := range []int{4000, 600, 0} {
		if s := CommentMarker + "\n" + renderMarkdown(r, limit); len(s) <= maxCommentBytes {
			return s
		}
	}
	s := CommentMarker + "\n" + renderMarkdown(r, 0)
	return clipText(s, maxCommentBytes-200) + "\n\n(The report is cut here to fit a comment: the whole of it is report.md in the job's artifact.)\n"
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

func renderMarkdown(r *Result, posLimit int) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## walkie review: %s\n\n", headline(r))
	p("**Verdict: %s.** %s.\n\n", r.Verdict, prose(strings.TrimSuffix(r.Reason, ".")))
	if r.Verdict == VerdictFailed {
		p("The review stopped before the reviewers could finish, so it says nothing about the design: fix the cause below and run the job again.\n\n")
	}
	if len(r.Docs) > 0 {
		p("Reviewed by %s (%s, at most %s) at commit `%s` against %s, merge base `%s`; %s, %s.\n\n",
			andList(r.Agents), r.Mode, walkie.Count(r.Docs[0].MaxRounds, "round", "rounds"), short(r.Head), baseLabel(r), short(r.MergeBase), walkie.Count(r.Rounds, "round", "rounds"), walkie.Money(r.CostUSD))
	}
	for _, w := range r.Warnings {
		p("> [!WARNING]\n> %s\n\n", oneLine(w)) // walkie's own words
	}
	for i := range r.Docs {
		renderDoc(&b, r, &r.Docs[i], posLimit)
	}
	if len(r.Reproduce) > 0 {
		p("<details><summary>Reproduce it locally</summary>\n\n%s\n</details>\n", fenced("sh", strings.Join(r.Reproduce, "\n")))
	}
	return b.String()
}

func renderDoc(b *strings.Builder, r *Result, d *DocResult, posLimit int) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("### `%s`: %s\n\n%s.\n\n", d.Doc, d.Verdict, prose(upperFirst(d.Reason)))
	if len(d.Parties) > 0 {
		p("| agent | role | signed off | turns | sessions | cost |\n|---|---|---|---|---|---|\n")
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
			p("| %s | %s | %s | %d | %d | %s |\n", pt.Agent, pt.Role, signed, pt.Turns, sessions, cost)
		}
		p("\n")
	}
	if len(d.Objections) > 0 {
		p("**Open objections**\n\n")
		for i, o := range d.Objections {
			where := ""
			if o.Line > 0 {
				where = " on " + lineLink(r, o)
			}
			p("%d. **%s**%s: %s\n", i+1, o.Agent, where, codeSpan(o.Text))
		}
		p("\n")
	} else if d.Verdict == VerdictDisagreed {
		p("No objection was written as an `Objection:` line; the final positions below say what stands.\n\n")
	}
	if d.Revision != "" {
		p("<details><summary>The implementer's revision</summary>\n\n%s\n</details>\n\n", fenced("diff", clipText(d.Revision, max(posLimit, 1000)*4)))
	}
	if posLimit > 0 && hasPosition(d) {
		p("<details><summary>Final positions</summary>\n\n")
		for _, pt := range d.Parties {
			if pt.Position == "" {
				continue
			}
			state := "did not sign off"
			switch {
			case pt.Role == "implementer":
				state = "implementer"
			case pt.Signed:
				state = "signed off"
			}
			p("**%s** (%s)\n\n%s\n", pt.Agent, state, fenced("text", clipText(pt.Position, posLimit)))
		}
		p("</details>\n\n")
	}
	if len(d.Failures) > 0 {
		p("<details><summary>Attempts that failed (%d)</summary>\n\n", len(d.Failures))
		for _, f := range d.Failures {
			p("- %s\n", codeSpan(f))
		}
		p("\n</details>\n\n")
	}
	if len(d.Discarded) > 0 {
		p("Changes the agents made in their copy of the repository, thrown away: %s.\n\n", codeList(d.Discarded, 20))
	}
	if len(d.LeftOut) > 0 {
		p("Kept out of the agents' copy (agent CLI settings that could run commands): %s.\n\n", codeList(d.LeftOut, 20))
	}
	verified := "verifies"
	if !d.Verified {
		verified = "does NOT verify: " + codeSpan(d.VerifyError)
	}
	budget := ""
	if d.BudgetUSD > 0 {
		budget = fmt.Sprintf(" of a %s budget", walkie.Money(d.BudgetUSD))
	}
	p("Record `%s/%s`, chain hash `%s`, %s; %d turns, %s%s.\n\n", d.ID, filepath.Base(d.Record), d.ChainHash, verified, d.Turns, walkie.Money(d.CostUSD), budget)
}

// baseLabel names the base as a person knows it: the pull request's
// branch when the base is its commit.
func baseLabel(r *Result) string {
	if pr := r.PullRequest; pr != nil && pr.BaseRef != "" && r.Base == pr.BaseSHA {
		return fmt.Sprintf("`%s` at `%s`", pr.BaseRef, short(r.BaseSHA))
	}
	if r.Base == r.BaseSHA {
		return "`" + short(r.Base) + "`"
	}
	return fmt.Sprintf("`%s` at `%s`", r.Base, short(r.BaseSHA))
}

func hasPosition(d *DocResult) bool {
	for _, pt := range d.Parties {
		if pt.Position != "" {
			return true
		}
	}
	return false
}

// lineLink is a citation as a link to the line at the head commit when
// the repository's address is known.
func lineLink(r *Result, o Objection) string {
	label := fmt.Sprintf("%s:%d", o.File, o.Line)
	anchor := fmt.Sprintf("#L%d", o.Line)
	if o.EndLine > o.Line {
		label += fmt.Sprintf("-%d", o.EndLine)
		anchor += fmt.Sprintf("-L%d", o.EndLine)
	}
	if r.PullRequest == nil || r.PullRequest.URL == "" {
		return "`" + label + "`"
	}
	repo, _, ok := strings.Cut(r.PullRequest.URL, "/pull/")
	if !ok {
		return "`" + label + "`"
	}
	return fmt.Sprintf("[`%s`](%s/blob/%s/%s%s)", label, repo, r.Head, o.File, anchor)
}

var backticks = regexp.MustCompile("`+")

// markdownPunct are the characters markdown may read as markup.
var markdownPunct = regexp.MustCompile("[\\\\`*_\\[\\]<>#|~!&]")

// mention is an @ that GitHub would read as a mention.
var mention = regexp.MustCompile(`@(\w)`)

// prose shows a line of text that may quote what an agent wrote (a reason
// naming a failed turn's detail, say) as plain text: every character
// markdown could read as markup is escaped, and an @ is kept from
// mentioning anyone by an invisible word joiner.
func prose(s string) string {
	s = markdownPunct.ReplaceAllString(oneLine(s), `\$0`)
	return mention.ReplaceAllString(s, "@\u2060$1")
}

// fence is a run of backticks longer than any in text.
func fence(text string, least int) string {
	n := least
	for _, m := range backticks.FindAllString(text, -1) {
		n = max(n, len(m)+1)
	}
	return strings.Repeat("`", n)
}

// fenced shows text as a fenced code block that nothing in it can close.
func fenced(lang, text string) string {
	f := fence(text, 3)
	return f + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + f + "\n"
}

// codeSpan shows text on one line as inline code that nothing in it can
// close. A table's | would still split a cell, so none is used in one.
func codeSpan(text string) string {
	text = oneLine(text)
	if text == "" {
		return "(empty)"
	}
	f := fence(text, 1)
	if strings.HasPrefix(text, "`") || strings.HasSuffix(text, "`") {
		text = " " + text + " "
	}
	return f + text + f
}

func codeList(items []string, limit int) string {
	var out []string
	for i, s := range items {
		if i == limit {
			out = append(out, fmt.Sprintf("and %d more", len(items)-limit))
			break
		}
		out = append(out, codeSpan(s))
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
