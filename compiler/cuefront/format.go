package cuefront

import (
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"

	"poolc.dev/poolc/pools"
)

// Format returns the canonical layout of a CUE file, as `cue fmt` writes
// it, or the syntax errors that prevent it.
func Format(filename string, src []byte) ([]byte, pools.Diagnostics) {
	var diags pools.Diagnostics
	f, err := parser.ParseFile(filename, src, parser.ParseComments)
	if err != nil {
		addCUE(&diags, err)
		return nil, diags
	}
	out, err := format.Node(f, format.Simplify())
	if err != nil {
		addCUE(&diags, err)
		return nil, diags
	}
	return out, nil
}
