package hclfront

import (
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

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

// What the HCL parser cannot bound itself is refused from the bytes,
// before it parses: heredocs (quadratic in their lines: 25,000 took 18 s)
// at their "<<", and a file of more tokens than MaxTokens where the count
// passes it. Strings, comments and template sequences count as the lexer
// counts them.
func TestSizeIsBoundedBeforeParsing(t *testing.T) {
	for name, c := range map[string]struct {
		src       string
		code      string
		line, col int
	}{
		"heredoc":        {"pool \"p\" {\n  x = <<EOT\n" + strings.Repeat("a\n", 100) + "EOT\n}\n", "heredoc", 2, 7},
		"indented":       {"pool \"p\" {\n  x = <<-EOT\n  a\n  EOT\n}\n", "heredoc", 2, 7},
		"nested heredoc": {"pool \"p\" {\n  x = [\"${<<EOT\nEOT\n}\"]\n}\n", "heredoc", 2, 11},
		"list":           {"pool \"p\" {\n  x = [" + strings.Repeat("1,", 600) + "1]\n}\n", "too-large", 2, 1006},
		"interpolations": {"pool \"p\" {\n  x = \"" + strings.Repeat(`${"a"}`, 200) + "\"\n}\n", "too-large", 2, 1000},
		"number":         {"pool \"p\" {\n  x = " + strings.Repeat("9", 100) + "\n}\n", "too-large", 2, 7},
	} {
		d := tooBig("p.hcl", []byte(c.src), 1000)
		if d == nil || d.Code != c.code || d.Pos.Line != c.line || d.Pos.Col > c.col || d.Pos.Col < 6 {
			t.Errorf("%s: got %+v, want %s at %d:%d or a little before", name, d, c.code, c.line, c.col)
		}
	}
	for name, src := range map[string]string{
		"strings":      `pool "p" { x = "a << b, ${"}"} /* // # %%{ $${" }` + "\n",
		"comments":     "# a << b\n// <<EOT\n/* <<EOT */\npool \"p\" {}\n",
		"escaped":      `pool "p" { x = "\"<<\"" }` + "\n",
		"braces in ${": `pool "p" { x = "${ {a = 1}.a }<<" }` + "\n",
	} {
		if d := tooBig("p.hcl", []byte(src), 1000); d != nil {
			t.Errorf("%s: refused: %+v", name, d)
		}
	}
	big, err := os.ReadFile("../../examples/spark-lab/spark-lab.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hclsyntax.LexConfig(big, "spark-lab.hcl", hcl.InitialPos)
	if n, _, _ := countTokens(big, MaxTokens); n < len(want) {
		t.Errorf("counted %d tokens in the example, the lexer %d: the count must bound them from above", n, len(want))
	}
}
