package review

import (
	"bytes"
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// How a reviewer writes an objection, and cites a line of the document
// (docs/ci.md, "Objections and line citations"):
//
//	Objection: the cache has no size bound (docs/design/cache.md:42)
//	- **Objection:** retries are unbounded, docs/design/cache.md:50-53
//
// An objection is a line that starts with "Objection:" (after an optional
// list bullet or number, and optional bold), running on over the lines
// that follow it up to a blank line or the next item. It cites a line
// when it holds PATH:LINE, PATH:LINE-END, PATH#LLINE or PATH#LLINE-LEND,
// PATH being a reviewed document's path from the top of the repository.
// Lines inside fenced code blocks are never objections: a reviewer quoting
// the document must not raise its text.

// Objection is one open point a reviewer raised.
type Objection struct {
	Agent string `json:"agent"`
	Text  string `json:"text"`
	// File, Line and EndLine are the document line it cites, if any.
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	EndLine int    `json:"end_line,omitempty"`
}

// maxObjectionBytes bounds one objection's text: it is shown in a comment.
const maxObjectionBytes = 1000

var (
	objectionRe = regexp.MustCompile(`^\s{0,3}(?:[-*+]\s+|\d{1,3}[.)]\s+)?(?:\*\*|__)?(?i:objection)(?:\s+\d{1,3})?\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*(.*)$`)
	// itemRe starts a new list item, heading or labelled line: where an
	// objection's text ends.
	itemRe  = regexp.MustCompile(`^\s*(?:[-*+]\s|\d{1,3}[.)]\s|#|>|\|)|^\s*(?:\*\*|__)?(?i:suggestion|objection|signed-off-by)\b`)
	fenceRe = regexp.MustCompile("^\\s{0,3}(`{3,}|~{3,})")
)

// parseObjections returns the objections written in a turn's body.
func parseObjections(body []byte) []string {
	var out []string
	var cur *strings.Builder
	flush := func() {
		if cur != nil {
			if t := strings.TrimSpace(cur.String()); t != "" {
				out = append(out, clipText(t, maxObjectionBytes))
			}
			cur = nil
		}
	}
	fence := ""
	for _, raw := range strings.Split(string(body), "\n") {
		l := strings.TrimSuffix(raw, "\r")
		if m := fenceRe.FindStringSubmatch(l); m != nil {
			switch {
			case fence == "":
				flush()
				fence = m[1]
			case strings.HasPrefix(strings.TrimSpace(l), fence) && strings.TrimLeft(strings.TrimSpace(l), fence[:1]) == "":
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if m := objectionRe.FindStringSubmatch(l); m != nil {
			flush()
			cur = &strings.Builder{}
			cur.WriteString(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[1]), "**")))
			continue
		}
		if cur == nil {
			continue
		}
		if strings.TrimSpace(l) == "" || itemRe.MatchString(l) {
			flush()
			continue
		}
		cur.WriteString(" " + strings.TrimSpace(l))
	}
	flush()
	return out
}

// citer finds line citations of the reviewed documents.
type citer struct {
	re    *regexp.Regexp
	paths []string // the documents, in the order of the pattern's groups
	lines map[string]int
}

// newCiter builds a citer for documents given as path → number of lines.
func newCiter(lines map[string]int) *citer {
	c := &citer{lines: lines}
	var alts []string
	for p := range lines {
		c.paths = append(c.paths, p)
	}
	// Longest first: docs/a.md must not win over docs/a.md.bak's citation.
	slices.SortFunc(c.paths, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b)) })
	for _, p := range c.paths {
		alts = append(alts, regexp.QuoteMeta(p))
	}
	if len(alts) == 0 {
		return c
	}
	c.re = regexp.MustCompile(`(?:^|[^\w./-])(` + strings.Join(alts, "|") + `)(?::(\d{1,7})(?:\s?[-–]\s?(\d{1,7}))?|#L(\d{1,7})(?:-L?(\d{1,7}))?)`)
	return c
}

// cite fills in the first valid citation in o's text: a line that exists
// in the document at the head commit. A citation past the end is not one.
func (c *citer) cite(o *Objection) {
	if c.re == nil {
		return
	}
	for _, m := range c.re.FindAllStringSubmatch(o.Text, -1) {
		file := m[1]
		first, last := m[2], m[3]
		if first == "" {
			first, last = m[4], m[5]
		}
		n, _ := strconv.Atoi(first)
		end, _ := strconv.Atoi(last)
		if n < 1 || n > c.lines[file] {
			continue
		}
		if end < n || end > c.lines[file] {
			end = 0
		}
		o.File, o.Line, o.EndLine = file, n, end
		return
	}
}

// lineCount is the number of lines of a text file.
func lineCount(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	n := bytes.Count(b, []byte("\n"))
	if b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// clipText cuts s to at most n bytes on a rune boundary, marking the cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
