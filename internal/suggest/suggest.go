// Package suggest finds the "did you mean" candidate for a mistyped name
// (a subcommand, an agent, a key of a folder file).
package suggest

import "strings"

// Closest returns the choice nearest to s by edit distance, when it is
// near enough to be a typo (at most a third of the longer name's length,
// and at least one edit allowed), else "". Ties go to the first choice.
func Closest(s string, choices []string) string {
	best, bestD := "", -1
	for _, c := range choices {
		if c == s {
			continue
		}
		d := distance(strings.ToLower(s), strings.ToLower(c))
		limit := max(len(s), len(c)) / 3
		if limit < 1 {
			limit = 1
		}
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// Phrase is ` (did you mean "X"?)` for Closest, or "".
func Phrase(s string, choices []string) string {
	if m := Closest(s, choices); m != "" {
		return ` (did you mean "` + m + `"?)`
	}
	return ""
}

// distance is the Levenshtein distance of a and b (bytes), with adjacent
// transpositions counted as one edit.
func distance(a, b string) int {
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
