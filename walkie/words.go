package walkie

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Count writes a number with its noun in the right form: "1 round",
// "2 rounds". Every sentence walkie writes for a person about rounds,
// turns and attempts goes through it, so none says "1 rounds".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Unretried says why an attempt no retry can fix (an outcome that is not
// Retryable) stopped a debate: who, what the session said, and that it is
// never retried, naming each once. A rule's detail usually says it all
// ("claude is not logged in or its API key was refused: set …"), so it
// stands alone when it opens with the agent's name, and is only labelled
// ("not logged in: …", "blocked: …") when it does not say what happened.
func Unretried(o Outcome, agent, detail string) string {
	what, tail := "blocked", "a blocking prompt is never retried"
	if o == OutcomeAuth {
		what, tail = "not logged in", "auth is never retried"
	}
	switch {
	case detail == "":
		return agent + " is " + what + "; " + tail
	case opensWith(detail, agent):
		return detail + "; " + tail
	case strings.Contains(strings.ToLower(detail), what):
		return agent + ": " + detail + "; " + tail
	}
	return agent + ": " + what + ": " + detail + "; " + tail
}

// opensWith reports whether s begins with the word w: "claude is …" and
// "claude's key …" do for claude, "claude-2 is …" does not.
func opensWith(s, w string) bool {
	rest, ok := strings.CutPrefix(s, w)
	if !ok || w == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.')
}
