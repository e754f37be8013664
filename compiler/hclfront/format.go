package hclfront

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"poolc.dev/poolc/pools"
)

// Format returns the canonical layout of an HCL file (aligned equals
// signs, two-space indentation), or the syntax errors that prevent it.
func Format(filename string, src []byte) ([]byte, pools.Diagnostics) {
	_, hd := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if hd.HasErrors() {
		var diags pools.Diagnostics
		addHCL(&diags, hd)
		return nil, diags
	}
	return hclwrite.Format(src), nil
}
