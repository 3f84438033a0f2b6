package session

import "regexp"

// ruleWindow is how much plain text before the current chunk the prompt
// rules still see, so a prompt split across reads (or redrawn in pieces)
// matches. It bounds both memory and the length of a match.
const ruleWindow = 4 << 10

// ruleMatch is one rule that matched, with the text it matched.
type ruleMatch struct {
	rule Rule
	text string
}

// ruleSet checks the prompt rules against the plain-text stream. Each rule
// fires at most once per session: a reply is typed once (a prompt that
// comes back after the answer means the answer was not accepted, and typing
// it again would loop), and an outcome ends the session anyway.
type ruleSet struct {
	rules []Rule
	fired []bool
	tail  []byte // up to ruleWindow bytes of text already checked
}

func newRuleSet(rules []Rule) *ruleSet {
	rs := &ruleSet{}
	for _, r := range rules {
		if r.Pattern != nil {
			rs.rules = append(rs.rules, r)
		}
	}
	rs.fired = make([]bool, len(rs.rules))
	return rs
}

// active reports whether any rule can still fire.
func (rs *ruleSet) active() bool {
	for _, f := range rs.fired {
		if !f {
			return true
		}
	}
	return false
}

// check feeds text to the rules and returns the rules that fired now, in
// rule order.
func (rs *ruleSet) check(text []byte) []ruleMatch {
	if len(rs.rules) == 0 || len(text) == 0 {
		return nil
	}
	prev := len(rs.tail)
	rs.tail = append(rs.tail, text...)
	var out []ruleMatch
	for i, r := range rs.rules {
		if rs.fired[i] {
			continue
		}
		loc := findEndingAfter(r.Pattern, rs.tail, prev)
		if loc == nil {
			continue
		}
		rs.fired[i] = true
		out = append(out, ruleMatch{rule: r, text: string(rs.tail[loc[0]:loc[1]])})
	}
	if over := len(rs.tail) - ruleWindow; over > 0 {
		// Slide the window; copy so the backing array does not grow forever.
		n := copy(rs.tail, rs.tail[over:])
		rs.tail = rs.tail[:n]
	}
	return out
}

// findEndingAfter returns the first match of re in b that ends after
// offset from (that is, uses some of the new text). A match lying wholly in
// the old text would have fired on an earlier check unless the pattern
// depends on what follows; skipping it avoids firing on a stale prompt.
func findEndingAfter(re *regexp.Regexp, b []byte, from int) []int {
	for _, loc := range re.FindAllIndex(b, -1) {
		if loc[1] > from {
			return loc
		}
	}
	return nil
}
