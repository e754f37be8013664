package spelling

import (
	"regexp"
	"strings"
	"testing"
)

// rules are the rules the tests hold against their patterns: the shared
// ones and rules of the shapes the actuators use.
var rules = []*Rule{Name, Alias, New("A-Za-z0-9.:-", "A-Za-z0-9.:-", 1, 253), New("0-9a-f", "0-9a-f", 64, 64), New("A-Za-z0-9_", "A-Za-z0-9._-", 1, 64)}

func TestAllows(t *testing.T) {
	for _, tc := range []struct {
		rule *Rule
		name string
		want bool
	}{
		{Name, "qwen3-8b_q4.gguf", true},
		{Name, "a", true},
		{Name, "", false},
		{Name, "-flag", false},
		{Name, ".hidden", false},
		{Name, "a b", false},
		{Name, "a;b", false},
		{Name, "a/b", false},
		{Name, strings.Repeat("a", 128), true},
		{Name, strings.Repeat("a", 129), false},
		{Name, "é", false},
		{Alias, "org/model:q4@v1+x", true},
		{Alias, "a,b", false},
		{Alias, ":a", false},
		{rules[3], strings.Repeat("0f", 32), true},
		{rules[3], strings.Repeat("0f", 31), false},
		{rules[3], strings.Repeat("0F", 32), false},
	} {
		if got := tc.rule.Allows(tc.name); got != tc.want {
			t.Errorf("%s allows %q = %v, want %v", tc.rule.Pattern(), tc.name, got, tc.want)
		}
	}
}

// A rule allows exactly what its pattern matches.
func FuzzAllowsIsPattern(f *testing.F) {
	for _, s := range []string{"", "a", "lane-1", "a/b:c", "-x", strings.Repeat("z", 128), strings.Repeat("9", 129), "x\n", "\xff"} {
		f.Add(s)
	}
	patterns := make([]*regexp.Regexp, len(rules))
	for i, r := range rules {
		patterns[i] = regexp.MustCompile(r.Pattern())
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, r := range rules {
			if got, want := r.Allows(s), patterns[i].MatchString(s); got != want {
				t.Errorf("%s: Allows(%q) = %v, the pattern matches: %v", r.Pattern(), s, got, want)
			}
		}
	})
}

func TestNewRefusesWhatItCannotState(t *testing.T) {
	for _, tc := range []struct {
		first, rest string
		min, max    int
	}{
		{"a-z", "a-z", 0, 3}, {"a-z", "a-z", 4, 3}, {"", "a-z", 1, 3}, {"a-z]", "a-z", 1, 3}, {"z-a", "a-z", 1, 3}, {"^a", "a", 1, 2},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%q, %q, %d, %d) did not panic", tc.first, tc.rest, tc.min, tc.max)
				}
			}()
			New(tc.first, tc.rest, tc.min, tc.max)
		}()
	}
}
