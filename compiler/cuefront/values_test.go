package cuefront

import (
	"strings"
	"testing"
)

// Values CUE evaluates but a pool cannot hold are reported where they are
// written, never passed over as if absent.
func TestValuesAPoolCannotHold(t *testing.T) {
	for src, want := range map[string]string{
		"pool: p: x: 'a.lan'\n": "wrong-type pool.cue:1:13: '...' is bytes in CUE",
		"pool: p: x: len\n":     "wrong-type pool.cue:1:13: len is not a value a pool can hold",
		"or\n":                  "wrong-type pool.cue:1:1: or is not a value a pool can hold",
	} {
		diags, _ := parseOne(src)
		if len(diags) != 1 || !strings.HasPrefix(diags[0], want) {
			t.Errorf("%q: got %q, want one error starting %q", src, diags, want)
		}
	}
}
