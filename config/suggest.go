package config

import (
	"fmt"
	"strings"
)

// suggest returns the candidate s is most likely a typo of, or "" when
// none is close enough. Closeness is the edit distance, ignoring case;
// among equally close candidates the one nearest in length wins, because
// a swapped or mistyped letter is a likelier slip than a letter too many
// ("modle" is model, not mode). Ties beyond that go to the earlier
// candidate, so the answer does not depend on map order.
func suggest(s string, candidates []string) string {
	in := []rune(strings.ToLower(s))
	best, bestDist, bestSkew := "", 0, 0
	for _, c := range candidates {
		rc := []rune(strings.ToLower(c))
		dist, skew := editDistance(in, rc), abs(len(rc)-len(in))
		if best == "" || dist < bestDist || (dist == bestDist && skew < bestSkew) {
			best, bestDist, bestSkew = c, dist, skew
		}
	}
	// One edit in three letters, at most three: "x" suggests nothing, a
	// long key survives a couple of slips.
	if best == "" || bestDist > max(1, min(3, len(in)/3)) {
		return ""
	}
	return best
}

// maxEditRunes bounds the strings editDistance compares; longer ones are
// never typos of a key, and the cost grows with the product of the lengths.
const maxEditRunes = 64

// editDistance is the optimal string alignment distance between a and b:
// the fewest insertions, deletions, substitutions and swaps of two
// adjacent letters that turn a into b, no letter edited twice. Unlike
// plain Levenshtein a swap is one edit, so "modle" is as close to "model"
// as to "mode". Strings longer than maxEditRunes are far from everything.
func editDistance(a, b []rune) int {
	if len(a) > maxEditRunes || len(b) > maxEditRunes {
		return maxEditRunes * 2
	}
	// Three rows of the dynamic-programming table: a swap looks two back.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
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
