// Package plural writes a count with its noun in the right number ("1
// step", "2 steps", "1 alias", "0 aliases"). Every message that counts
// something for people goes through it, so singular and plural agree in
// every view instead of each one spelling "%d steps".
package plural

import (
	"strconv"
	"strings"
)

// Count is n followed by noun in the number n calls for: "1 step",
// "2 steps". noun is the singular; see Noun for how the plural is made.
func Count(n int, noun string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun)
}

// Noun is the singular noun when n is 1 (or -1), its plural otherwise.
// The plural is the English regular one, made on the noun's last word:
// "es" after s, x, z, ch and sh ("alias", "aliases"), "ies" for a
// consonant and y ("entry", "entries"), "s" otherwise ("pod pool",
// "pod pools"). The nouns poolc counts are all regular.
func Noun(n int, noun string) string {
	if n == 1 || n == -1 {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "z"),
		strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	case len(noun) >= 2 && noun[len(noun)-1] == 'y' && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// Agree is one when n is 1 (or -1) and many otherwise: the verb or
// pronoun that agrees with a counted noun, as in Agree(n, "is", "are")
// or Agree(n, "it", "them").
func Agree(n int, one, many string) string {
	if n == 1 || n == -1 {
		return one
	}
	return many
}
