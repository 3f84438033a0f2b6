package walkie

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// How an entry states its tags in its text (format 3): trailer lines, as
// git commit messages end, in one block at the end of the entry, right
// before the sign-off if there is one:
//
//	Approved: the 27 tests pass at def4567.
//
//	Type: verdict
//	Verdict: approve
//	Refs: main@def4567, docs/api.md
//	Signed-off-by: codex
//
// Keys are read whatever their case; each comes at most once. A line that
// starts with one of them anywhere else in the entry is refused rather
// than read as text, so a trailer an agent meant is never lost silently.

// trailerRe is a trailer line walkie reads.
var trailerRe = regexp.MustCompile(`(?i)^(type|verdict|refs):[ \t]*(.*?)[ \t]*$`)

// tagProblem is the first thing wrong with an entry's trailer lines; line
// is 1-based in the lines given.
type tagProblem struct {
	line int
	msg  string
}

func (p *tagProblem) Error() string { return fmt.Sprintf("line %d: %s", p.line, p.msg) }

// splitTrailers finds the trailer block at the end of lines (an entry's
// text without its sign-off) and reads it. text is lines without the
// block and the blank lines before it; found says whether there was one.
func splitTrailers(lines []string) (text []string, t Tags, found bool, pr *tagProblem) {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	start := end
	for start > 0 && trailerRe.MatchString(strings.TrimSuffix(lines[start-1], "\r")) {
		start--
	}
	for i := 0; i < start; i++ {
		if m := trailerRe.FindStringSubmatch(strings.TrimSuffix(lines[i], "\r")); m != nil {
			return nil, Tags{}, false, &tagProblem{line: i + 1, msg: fmt.Sprintf("%q is a trailer line, and trailers stand together in one block at the end of the entry (right before a sign-off); move it there, or reword it", Clip(lines[i], 40))}
		}
	}
	seen := map[string]bool{}
	for i := start; i < end; i++ {
		m := trailerRe.FindStringSubmatch(strings.TrimSuffix(lines[i], "\r"))
		key, val := strings.ToLower(m[1]), m[2]
		bad := func(format string, args ...any) (text []string, t Tags, found bool, pr *tagProblem) {
			return nil, Tags{}, false, &tagProblem{line: i + 1, msg: fmt.Sprintf(format, args...)}
		}
		if seen[key] {
			return bad("a second %s: line; give each trailer once", m[1])
		}
		seen[key] = true
		if val == "" {
			return bad("%s: has no value", m[1])
		}
		switch key {
		case "type":
			t.Type = strings.ToLower(val)
		case "verdict":
			t.Verdict = strings.ToLower(val)
		case "refs":
			refs, err := parseRefList(val)
			if err != nil {
				return bad("Refs: %v", err)
			}
			if len(refs) == 0 {
				return bad("%s: names no ref", m[1])
			}
			t.Refs = refs
		}
	}
	if err := checkTagValues(t); err != nil {
		return nil, Tags{}, false, &tagProblem{line: start + 1, msg: err.Error()}
	}
	text = lines[:start]
	for len(text) > 0 && strings.TrimSpace(text[len(text)-1]) == "" {
		text = text[:len(text)-1]
	}
	return text, t, start < end, nil
}

// bodyTags reads the tags an entry's body states. first is the body's
// line (1-based) where the trailer block starts, 0 when it has none.
func bodyTags(body []byte) (t Tags, first int, pr *tagProblem) {
	unsigned, _ := SplitSignOff(body)
	s := strings.TrimRight(string(unsigned), "\r\n\t ")
	if s == "" {
		return Tags{}, 0, nil
	}
	lines := strings.Split(s, "\n")
	n := len(lines)
	text, t, found, pr := splitTrailers(lines)
	if pr != nil || !found {
		return t, 0, pr
	}
	first = len(text) + 1
	for first <= n && !trailerRe.MatchString(strings.TrimSuffix(lines[first-1], "\r")) {
		first++
	}
	return t, first, nil
}

// renderTrailers writes t as the writer ends an entry with it.
func renderTrailers(t Tags) []byte {
	var b bytes.Buffer
	if t.Type != "" {
		fmt.Fprintf(&b, "Type: %s\n", t.Type)
	}
	if t.Verdict != "" {
		fmt.Fprintf(&b, "Verdict: %s\n", t.Verdict)
	}
	if len(t.Refs) > 0 {
		fmt.Fprintf(&b, "Refs: %s\n", strings.Join(t.RefStrings(), ", "))
	}
	return b.Bytes()
}

// mergeTags lays what a post's flags say over what its body's trailers
// say; a field both give must agree.
func mergeTags(flags, body Tags) (Tags, error) {
	out := body
	pick := func(name, f, b string, dst *string) error {
		switch {
		case f == "":
		case b != "" && b != f:
			return fmt.Errorf("the body's %s: line says %s but the flag says %s: give it once", name, b, f)
		default:
			*dst = f
		}
		return nil
	}
	if err := pick("Type", flags.Type, body.Type, &out.Type); err != nil {
		return Tags{}, err
	}
	if err := pick("Verdict", flags.Verdict, body.Verdict, &out.Verdict); err != nil {
		return Tags{}, err
	}
	if len(flags.Refs) > 0 {
		if len(body.Refs) > 0 && !slices.Equal(flags.Refs, body.Refs) {
			return Tags{}, fmt.Errorf("the body's Refs: line says %s but --refs says %s: give them once",
				strings.Join(body.RefStrings(), ", "), strings.Join(flags.RefStrings(), ", "))
		}
		out.Refs = flags.Refs
	}
	return out, checkTagValues(out)
}

// retrail rewrites the trailer block of an unstamped turn (heading, text,
// trailers, sign-off) to say tags, in the writer's form: the controller
// adds a ref the agent did not cite (Expect.Extra).
func retrail(turn []byte, tags Tags) []byte {
	unsigned, name := SplitSignOff(turn)
	lines := strings.Split(strings.TrimRight(string(unsigned), "\r\n\t "), "\n")
	var signOff []string
	if name != "" {
		signOff = []string{strings.TrimRight(string(turn[len(unsigned):]), "\r\n\t ")}
	}
	text, _, _, pr := splitTrailers(lines)
	if pr != nil {
		return turn // the judge refused it already; never reached
	}
	var b bytes.Buffer
	b.WriteString(strings.Join(text, "\n") + "\n")
	if !tags.IsZero() {
		b.WriteString("\n")
		b.Write(renderTrailers(tags))
	}
	for _, l := range signOff {
		b.WriteString(l + "\n")
	}
	return b.Bytes()
}
