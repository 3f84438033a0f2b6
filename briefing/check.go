package briefing

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// headingRe is a section heading inside a briefing. Level 2 is what the
// template writes; level 3 is accepted because agents and people demote
// headings under `# Briefing` now and then.
var headingRe = regexp.MustCompile(`^#{2,3}[ \t]+(.*?)[ \t#]*$`)

// Report is what Check found in a briefing.
type Report struct {
	Words    int      // words of text, headings not counted (see WordCount)
	Missing  []string // sections with no heading
	Empty    []string // sections whose heading has no text under it
	Unfilled []string // sections still holding only the template's guidance
}

// Check reads a briefing (the text under `# Briefing`) against the
// template: every section present and written, and the length.
func Check(text []byte) Report {
	r := Report{Words: WordCount(text)}
	bodies := sectionBodies(string(text))
	for i, s := range Sections {
		body, ok := bodies[i]
		switch {
		case !ok:
			r.Missing = append(r.Missing, s.Title)
		case body == "":
			r.Empty = append(r.Empty, s.Title)
		case body == guidanceLine(s) || body == s.Guidance:
			r.Unfilled = append(r.Unfilled, s.Title)
		}
	}
	return r
}

// sectionBodies maps the index of each template section found in text to
// its trimmed body. The first heading matching a section wins.
func sectionBodies(text string) map[int]string {
	out := map[int]string{}
	cur := -1
	var body []string
	flush := func() {
		if cur >= 0 {
			if _, seen := out[cur]; !seen {
				out[cur] = strings.TrimSpace(strings.Join(body, "\n"))
			}
		}
		body = body[:0]
	}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		m := headingRe.FindStringSubmatch(strings.TrimRight(line, "\r"))
		if fence || m == nil {
			body = append(body, line)
			continue
		}
		flush()
		cur = sectionOf(m[1])
	}
	flush()
	return out
}

// sectionOf returns the index of the section a heading names, or -1.
func sectionOf(heading string) int {
	h := strings.ToLower(strings.TrimSpace(heading))
	h = strings.TrimLeft(h, "0123456789. )")
	for i, s := range Sections {
		if s.match(h) {
			return i
		}
	}
	return -1
}

// WordCount counts the words of a briefing's text: runs of non-space
// characters holding at least one letter or digit, so list bullets and
// rules do not count. Heading lines are left out: the five section
// headings are the same in every briefing and say nothing about it.
func WordCount(text []byte) int {
	n := 0
	fence := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		if !fence && (headingRe.MatchString(strings.TrimRight(line, "\r")) || strings.HasPrefix(line, "# ")) {
			continue
		}
		for _, f := range strings.Fields(line) {
			if strings.IndexFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
				n++
			}
		}
	}
	return n
}

// Length judgements: a distilled briefing more than a fifth outside the
// aim is "far off" and is sent back once.
func tooShort(words int) bool { return words < MinWords*4/5 }
func tooLong(words int) bool  { return words > MaxWords*6/5 }

// OK reports whether the briefing has every section written and a length
// not far off the aim.
func (r Report) OK() bool {
	return len(r.Missing) == 0 && len(r.Empty) == 0 && len(r.Unfilled) == 0 && !tooShort(r.Words) && !tooLong(r.Words)
}

// Problems lists what is wrong, one short sentence each, in the order a
// person would fix them; nil when OK.
func (r Report) Problems() []string {
	var p []string
	if len(r.Missing) > 0 {
		p = append(p, "missing sections: "+strings.Join(r.Missing, ", "))
	}
	if len(r.Empty) > 0 {
		p = append(p, "empty sections: "+strings.Join(r.Empty, ", "))
	}
	if len(r.Unfilled) > 0 {
		p = append(p, "sections still holding the template's guidance: "+strings.Join(r.Unfilled, ", "))
	}
	switch {
	case tooShort(r.Words):
		p = append(p, fmt.Sprintf("%d words, far below the %d-%d aimed at", r.Words, MinWords, MaxWords))
	case tooLong(r.Words):
		p = append(p, fmt.Sprintf("%d words, far above the %d-%d aimed at", r.Words, MinWords, MaxWords))
	}
	return p
}

// Reason is Problems as one line ("" when OK): what a retry of the
// distillation is told, and what a warning shows.
func (r Report) Reason() string { return strings.Join(r.Problems(), "; ") }
