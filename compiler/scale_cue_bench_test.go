package compiler_test

import (
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/poolgen"
)

// BenchmarkScaleCUE is BenchmarkScale for pools written in CUE: for
// generated CUE pools of each size in scalepool.Sizes, in one run,
//   - cue: CUE's own parse and build of the pool's files (parser.ParseFile
//     of each, one instance of them all, cuecontext's BuildInstance and a
//     Validate that asks for concrete values), the floor any tool that
//     evaluates the CUE pays;
//   - validate: compiler.Compile;
//   - plan-empty: Compile, then the plan from an empty state, rendered.
//
// validate and plan-empty report their ratio to cue in wall and CPU time
// ("x-parse", "x-parse-cpu"), as BenchmarkScale does to the HCL parse.
func BenchmarkScaleCUE(b *testing.B) {
	scale(b, poolgen.CUE, "cue", cueBuild, false)
}

// cueBuild parses and builds the files as one CUE instance and validates
// it, failing on any error.
func cueBuild(b *testing.B, files []compiler.File) {
	inst := build.NewContext().NewInstance("", nil)
	for _, f := range files {
		syntax, err := parser.ParseFile(f.Name, f.Src)
		if err != nil {
			b.Fatal(err)
		}
		if err := inst.AddSyntax(syntax); err != nil {
			b.Fatal(err)
		}
	}
	v := cuecontext.New().BuildInstance(inst)
	if err := v.Validate(cue.Concrete(true)); err != nil {
		b.Fatal(err)
	}
}
