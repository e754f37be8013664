package hclfront

import (
	"strings"
	"testing"

	"poolc.dev/poolc/compiler/tree"
)

// Input nested far past tree.MaxNesting must get an error, not exhaust the
// stack: nested lists crashed poolc from about 100,000 levels, chains of
// operators from about 500,000.
func TestDeepNestingIsAnError(t *testing.T) {
	const n = 200_000
	for name, src := range map[string]string{
		"lists":     "x = " + strings.Repeat("[", n) + strings.Repeat("]", n),
		"unclosed":  "x = " + strings.Repeat("[", n),
		"objects":   "x = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n),
		"parens":    "x = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"minus":     "x = " + strings.Repeat("-", n) + "1",
		"sum":       "x = " + strings.Repeat("1+", n) + "1",
		"templates": "x = " + strings.Repeat(`"${`, n) + "1" + strings.Repeat(`}"`, n),
		"heredocs":  "x = " + strings.Repeat("<<EOT\n${", n) + "1" + strings.Repeat("}\nEOT\n", n),
		"blocks":    strings.Repeat("a {\n", n) + strings.Repeat("}\n", n),
	} {
		_, diags := Parse("pool.hcl", []byte(`pool "p" {`+"\n"+src+"\n}\n"))
		if len(diags) != 1 || diags[0].Code != "too-deep" || diags[0].Pos.Line < 1 {
			t.Errorf("%s: got %v, want one too-deep error", name, diags)
		}
	}
}

// Nesting up to the limit is read as usual.
func TestNestingWithinTheLimit(t *testing.T) {
	n := tree.MaxNesting - 10
	src := `pool "p" {` + "\n  x = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n}\n"
	if _, diags := Parse("pool.hcl", []byte(src)); len(diags) != 0 {
		t.Fatal(diags)
	}
}

func TestNumbersOutOfRange(t *testing.T) {
	for _, num := range []string{"1e9999999", "-1e309", "1e-400"} {
		_, diags := Parse("pool.hcl", []byte(`pool "p" { x = `+num+" }\n"))
		if len(diags) != 1 || !strings.Contains(diags[0].Message, "out of range") || diags[0].Pos.Col != 16 {
			t.Errorf("%s: got %v, want an out-of-range error at 1:16", num, diags)
		}
	}
}
