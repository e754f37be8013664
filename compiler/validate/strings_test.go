package validate

import (
	"regexp"
	"strings"
	"testing"
)

// isDNSLabel is the DNS-1123 label of Kubernetes' own pattern.
func TestIsDNSLabelIsKubernetesPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	for _, s := range []string{"", "a", "0", "-", "a-", "-a", "a-b", "a--b", "A", "a.b", "a_b", "ns-1",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 62) + "-", "a" + strings.Repeat("-", 61) + "b"} {
		if got, want := isDNSLabel(s), pattern.MatchString(s); got != want {
			t.Errorf("isDNSLabel(%q) = %v, want %v", s, got, want)
		}
	}
}
