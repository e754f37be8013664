// Package numlit checks how the number literals of pool files are spelt.
//
// HCL and CUE disagree on some spellings: HCL reads 08081 as 8081 where CUE
// refuses it, and CUE reads 0x1f91, 0o17621, 8_081, 8K and .5 where HCL
// refuses them. Both front ends pass every literal through Check, so a pool
// file means the same number in either language, or is refused in both:
// decimal digits without a leading zero, an optional fraction, an optional
// exponent (8081, 8081.0, 0.9, 8.081e3).
package numlit

import (
	"fmt"
	"strings"
)

// MaxLength is the longest number literal read, in bytes: no pool needs
// more digits, and HCL reads a number into a 512-bit float in time that
// grows with the square of its length (a 5 MB number took two and a half
// minutes), so the HCL front end applies it to the bytes before parsing.
const MaxLength = 64

// Check returns nil when lit is a decimal number literal both languages
// read alike, and otherwise an error that says how to write it.
func Check(lit string) error {
	if len(lit) > MaxLength {
		return TooLong(lit)
	}
	i := digits(lit, 0)
	intPart := lit[:i]
	ok := i > 0
	if ok && i < len(lit) && lit[i] == '.' {
		j := digits(lit, i+1)
		ok = j > i+1
		i = j
	}
	if ok && i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		j := i + 1
		if j < len(lit) && (lit[j] == '+' || lit[j] == '-') {
			j++
		}
		k := digits(lit, j)
		ok = k > j
		i = k
	}
	ok = ok && i == len(lit)
	switch {
	case ok && len(intPart) > 1 && intPart[0] == '0':
		trimmed := strings.TrimLeft(intPart, "0")
		if trimmed == "" {
			trimmed = "0"
		}
		return fmt.Errorf("number %s has a leading zero, which HCL ignores and CUE refuses: write %s", lit, trimmed+lit[len(intPart):])
	case ok:
		return nil
	}
	lower := strings.ToLower(lit)
	switch {
	case strings.HasPrefix(lower, "0x"), strings.HasPrefix(lower, "0o"), strings.HasPrefix(lower, "0b"):
		return fmt.Errorf("number %s is not decimal: pool files write numbers in decimal digits, which HCL and CUE read alike", lit)
	case strings.Contains(lit, "_"):
		return fmt.Errorf("number %s has '_' separators, which HCL refuses: write %s", lit, strings.ReplaceAll(lit, "_", ""))
	case strings.HasPrefix(lit, "."):
		return fmt.Errorf("number %s has no digit before its point: write 0%s", lit, lit)
	case strings.HasSuffix(lit, "."):
		return fmt.Errorf("number %s has no digit after its point: write %s", lit, strings.TrimSuffix(lit, "."))
	case strings.IndexAny(lit, "KMGTPkmgtp") > 0:
		return fmt.Errorf("number %s has a multiplier, which HCL refuses: write the number in decimal digits", lit)
	}
	return fmt.Errorf("number %s must be decimal digits with an optional fraction and exponent (8081, 0.9, 1e3)", lit)
}

// digits returns the end of the run of decimal digits at s[i:].
func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// TooLong is the error of a number literal longer than MaxLength; it
// quotes the literal's start and counts the rest.
func TooLong(lit string) error {
	return fmt.Errorf("number %s… of %d characters is too long: poolc reads numbers of at most %d", lit[:min(len(lit), 16)], len(lit), MaxLength)
}
