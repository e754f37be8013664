package hclfront

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"poolc.dev/poolc/internal/poolgen"
)

// fragments are the pieces random sources are made of: everything the
// byte scan reads, and some of what makes it give up.
var fragments = []string{
	"a", "x-y", "1", "1.5e-3", "_", " ", "\t", "\n", "\r\n", "\r", ",", "=", "==", "=>", "-", "+", "!", "?", ":",
	".", "...", "*", "/", "%", "&&", "||", "<", ">=", "'", "$", "~", ";", "@",
	"{", "}", "[", "]", "(", ")",
	`"`, `"a"`, `"a b # c // d"`, `"\""`, `"\\"`, `"{[("`, `"}])"`, `"x,y"`, `"é"`, "\"a\nb\"",
	"# c\n", "// c\n", "# c", "// c\r\n", "#", "//",
	"${", "%{", "<<EOT\n", "EOT\n", "/*", "*/", "é", "\x00", "\xff",
	"\\", "\"\\u00e9\"", "\"ü\"", "\"a\\\n\"", "\"\t\"", "\"\r\n\"", "#\r\n", "//\r", "\v", "\f",
	"~}", "{~", "<<-EOT\n", "EOT", "1e", "0x1", "a1", "$$", "%%", "\"$${\"", "\"%%{\"", "\"$\"", "\"%\"", "\"\\$\"",
}

// The byte scan never bounds the nesting below what the tokens measure.
// Each check tries 300 sources: some mistakes show only once in thousands.
func TestDepthBoundIsAnUpperBound(t *testing.T) {
	source := rapid.Custom(func(t *rapid.T) []byte {
		return []byte(strings.Join(rapid.SliceOfN(rapid.SampledFrom(fragments), 0, 60).Draw(t, "parts"), ""))
	})
	rapid.Check(t, func(t *rapid.T) {
		for _, src := range rapid.SliceOfN(source, 300, 300).Draw(t, "sources") {
			bound, ok := depthBound(src)
			exact, _, _ := tokenDepth("f.hcl", src, 1<<30)
			if ok && bound < exact {
				t.Fatalf("bound %d below the tokens' depth %d for %q", bound, exact, src)
			}
		}
	})
}

// Plain pool files take the fast path, and it bounds them closely.
func TestPlainFilesAreBoundedFromTheBytes(t *testing.T) {
	example, err := os.ReadFile("../../examples/spark-lab/spark-lab.hcl")
	if err != nil {
		t.Fatal(err)
	}
	var big bytes.Buffer
	if err := poolgen.Write(&big, poolgen.HCL, poolgen.Options{Nodes: 50, Lanes: 500, Members: 10}); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string][]byte{"spark-lab": example, "generated": big.Bytes()} {
		bound, ok := depthBound(src)
		exact, _, _ := tokenDepth(name, src, 1<<30)
		if !ok || bound < exact || bound > 3*exact+5 {
			t.Errorf("%s: bound %d (ok %v), depth %d", name, bound, ok, exact)
		}
	}
}
