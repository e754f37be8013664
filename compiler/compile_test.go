package compiler

import "poolc.dev/poolc/pools"

// Compile is CompileWith without memory estimates, for the tests of this
// package (internal and external), whose pools declare memory_gb.
func Compile(files []File) (*Config, pools.Diagnostics) { return CompileWith(files, Options{}) }
