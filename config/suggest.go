package config

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hbollon/go-edlib"
)

// suggest returns the candidate s is most likely a typo of, or "" when
// none is close enough. Closeness is the edit distance, ignoring case;
// among equally close candidates the one nearest in length wins, because
// a swapped or mistyped letter is a likelier slip than a letter too many
// ("modle" is model, not mode). Ties beyond that go to the earlier
// candidate, so the answer does not depend on map order.
func suggest(s string, candidates []string) string {
	in := strings.ToLower(s)
	n := utf8.RuneCountInString(in)
	best, bestDist, bestSkew := "", 0, 0
	for _, c := range candidates {
		lc := strings.ToLower(c)
		dist, skew := editDistance(in, lc), abs(utf8.RuneCountInString(lc)-n)
		if best == "" || dist < bestDist || (dist == bestDist && skew < bestSkew) {
			best, bestDist, bestSkew = c, dist, skew
		}
	}
	// One edit in three letters, at most three: "x" suggests nothing, a
	// long key survives a couple of slips.
	if best == "" || bestDist > max(1, min(3, n/3)) {
		return ""
	}
	return best
}

// maxEditRunes bounds the strings editDistance compares; longer ones are
// never typos of a key, and the cost grows with the product of the lengths.
const maxEditRunes = 64

// editDistance is the optimal string alignment distance between a and b
// (go-edlib's): the fewest insertions, deletions, substitutions and swaps
// of two adjacent letters that turn a into b, no letter edited twice.
// Unlike plain Levenshtein a swap is one edit, so "modle" is as close to
// "model" as to "mode". Strings longer than maxEditRunes are far from
// everything.
func editDistance(a, b string) int {
	if utf8.RuneCountInString(a) > maxEditRunes || utf8.RuneCountInString(b) > maxEditRunes {
		return maxEditRunes * 2
	}
	return edlib.OSADamerauLevenshteinDistance(a, b)
}

func abs(n int) int { return max(n, -n) }

// didYouMean completes msg, a complaint that s is not one of names: with
// the likeliest name when one is close, else with the list of all of them
// under label.
func didYouMean(msg, s string, names []string, label string) string {
	if sug := suggest(s, names); sug != "" {
		return fmt.Sprintf("%s (did you mean %q?)", msg, sug)
	}
	return fmt.Sprintf("%s; %s: %s", msg, label, strings.Join(names, ", "))
}
