package compiler

import (
	"strings"
	"testing"
)

// An argument longer than Linux lets a program have is refused at its
// place: it passed validate and failed on the node after a prefetch.
func TestAnArgumentTooLongForExecIsRefused(t *testing.T) {
	src := "pool \"p\" {\n  model \"m\" {\n    path      = \"/m/m.gguf\"\n    size_gb   = 1\n    memory_gb = 2\n    args      = [\"-ngl\", \"" + strings.Repeat("a", 200_000) + "\"]\n  }\n}\n"
	_, diags := Compile([]File{{Name: "p.hcl", Src: []byte(src)}})
	if len(diags) != 1 || diags[0].Code != "too-long" || diags[0].Pos.String() != "p.hcl:6:26" {
		t.Fatalf("got %v, want one too-long error at p.hcl:6:26", diags)
	}
}
