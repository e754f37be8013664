//go:build !unix

package cuefront

import (
	"poolc.dev/poolc/compiler/tree"
	"poolc.dev/poolc/pools"
)

// evaluateApart is not available without RLIMIT_AS: CUE is evaluated in
// process.
func evaluateApart([]Source) (*tree.Value, pools.Diagnostics, bool) { return nil, nil, false }

// InProcessEnv has no effect where CUE is always evaluated in process.
const InProcessEnv = "POOLC_CUE_IN_PROCESS"
