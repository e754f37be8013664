package numlit

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, lit := range []string{"0", "8081", "8081.0", "0.9", "8.081e3", "1E3", "1e-3", "1e+3", "0.0", "10"} {
		if err := Check(lit); err != nil {
			t.Errorf("Check(%q) = %v, want nil", lit, err)
		}
	}
	for lit, want := range map[string]string{
		"08081":   "write 8081",
		"00.5":    "write 0.5",
		"0x1F91":  "not decimal",
		"0o17621": "not decimal",
		"0b1":     "not decimal",
		"8_081":   "write 8081",
		".5":      "write 0.5",
		"8.":      "write 8",
		"8K":      "multiplier",
		"8Ki":     "multiplier",
		"1e":      "decimal digits",
		"":        "decimal digits",
	} {
		err := Check(lit)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%q) = %v, want an error containing %q", lit, err, want)
		}
	}
}

var decimal = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// Check accepts exactly the decimal grammar up to MaxLength characters
// (a longer literal is refused whatever it is), and what it accepts Go
// reads as a number.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"8081", "08081", "8081.0", "0x1f", "1e5", ".5", "8_0", "8Ki", "1e+"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		err := Check(lit)
		if want := decimal.MatchString(lit) && len(lit) <= MaxLength; (err == nil) != want {
			t.Fatalf("Check(%q) = %v, grammar and length say %v", lit, err, want)
		}
		if err == nil {
			if _, perr := strconv.ParseFloat(lit, 64); perr != nil && !strings.Contains(perr.Error(), "range") {
				t.Fatalf("accepted %q, which Go cannot read: %v", lit, perr)
			}
		}
	})
}
