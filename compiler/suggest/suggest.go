// Package suggest finds the name a typo most likely meant.
package suggest

import "strings"

// Nearest returns the name in names closest to word by edit distance, when
// it is close enough to be a typo of it (at most two edits, and fewer than
// half of word's letters), or "".
func Nearest(word string, names []string) string {
	best, bestD := "", 3
	lw := strings.ToLower(word)
	for _, n := range names {
		if d := distance(lw, n); d < bestD {
			best, bestD = n, d
		}
	}
	if bestD*2 > len(word) {
		return ""
	}
	return best
}

// distance is the Levenshtein edit distance of a and b.
func distance(a, b string) int {
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
