package walkie

import (
	"regexp"
	"slices"
	"strconv"
)

// A verdict cites evidence: the commit it judged, and the tests that
// passed there ("Approved: the 27 tests pass at 8d41e07"). The commit is
// checked against the repository (refcheck.go); a count of passing tests
// is checked by running the thread's test command at that commit
// (test:, docs/review-threads.md, "Evidence that is checked").

// passCountRe finds a claim of passing tests: "27 tests pass", "all 27
// tests passed", "27 unit tests are green".
var passCountRe = regexp.MustCompile(`(?i)\b(\d{1,7})\s+(?:[a-z-]+\s+)?tests?\s+(?:all\s+|now\s+|still\s+)?(?:pass(?:es|ed)?|(?:are\s+|were\s+)?green|succeed(?:ed)?)\b`)

// PassCounts are the counts of passing tests text claims, each once, in
// the order it first gives them.
func PassCounts(text string) []int {
	var out []int
	for _, m := range passCountRe.FindAllStringSubmatch(text, -1) {
		n, err := strconv.Atoi(m[1])
		if err == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
