package briefing

import (
	"strings"
)

// Section is one part of a briefing: a `## Title` heading and its text.
type Section struct {
	Title    string // heading text as the template writes it
	Guidance string // the template's one line of guidance
	// match reports whether a heading (lower case, trimmed) names this
	// section: people shorten and reword headings ("Decided (do not
	// relitigate)"), so a heading is matched by its leading words.
	match func(h string) bool
}

func prefix(p ...string) func(string) bool {
	return func(h string) bool {
		for _, s := range p {
			if strings.HasPrefix(h, s) {
				return true
			}
		}
		return false
	}
}

// Sections are the parts every briefing has, in order.
var Sections = []Section{
	{Title: "Question", Guidance: "The one question this debate must settle, in a sentence or two.",
		match: prefix("question", "the question")},
	{Title: "Options", Guidance: "The answers on the table, one line each, with the main trade-off of each.",
		match: prefix("options", "the options")},
	{Title: "Constraints", Guidance: "Facts any answer must respect: load, compatibility, deadlines, budget, code that cannot change.",
		match: prefix("constraints", "the constraints")},
	{Title: "Decided (not to be relitigated)", Guidance: "What is already settled, and why; a turn that reopens it is off topic.",
		match: prefix("decided", "already decided", "what is decided", "what is already decided")},
	{Title: "What a sign-off means", Guidance: "What an agent agrees to by signing off, e.g. it would ship the proposal exactly as it stands.",
		match: func(h string) bool {
			return strings.Contains(h, "sign-off") || strings.Contains(h, "sign off") || strings.Contains(h, "signoff") || strings.Contains(h, "signing off")
		}},
}

// Words is the length a briefing aims at: long enough to hold the frame of
// the debate, short enough to be read in full at the start of every turn.
const (
	MinWords = 300
	MaxWords = 400
)

// guidanceLine is how the template writes a section's guidance: one line
// in italics, to be replaced by the person.
func guidanceLine(s Section) string { return "_" + s.Guidance + "_" }

// Template is the text of a new briefing (what goes under `# Briefing`):
// each section's heading and its line of guidance.
func Template() string {
	var b strings.Builder
	for i, s := range Sections {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("## " + s.Title + "\n")
		b.WriteString(guidanceLine(s) + "\n")
	}
	return b.String()
}

// IsPlaceholder reports whether text is no briefing at all: empty, the
// line `walkie init` writes when given none, or the untouched template.
// Such a briefing may be replaced by `walkie brief draft` without loss.
func IsPlaceholder(text []byte) bool {
	t := strings.TrimSpace(string(text))
	return t == "" || t == strings.TrimSpace(Template()) ||
		(strings.HasPrefix(t, "(Write the briefing here") && !strings.Contains(t, "\n"))
}
