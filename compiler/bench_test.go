package compiler_test

import (
	"os"
	"path/filepath"
	"testing"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/poolgen"
)

// benchPool is the size the design's goals are set for: HCL under 0.5 s,
// CUE under 2 s, under 300 MB peak, on two cores.
var benchPool = poolgen.Options{Nodes: 1000, Lanes: 10000, Members: 100, Seed: 1}

func BenchmarkLoadValidateHCL(b *testing.B) { benchLoad(b, poolgen.HCL) }

func BenchmarkLoadValidateCUE(b *testing.B) { benchLoad(b, poolgen.CUE) }

// benchLoad times compiler.Load (read, parse, schema check, decode,
// validate) of a generated pool written once, outside the timer.
func benchLoad(b *testing.B, lang poolgen.Language) {
	path := filepath.Join(b.TempDir(), "gen."+string(lang))
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := poolgen.Write(f, lang, benchPool); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cfg, diags := compiler.Load([]string{path})
		if len(diags) > 0 || cfg == nil {
			b.Fatalf("%d findings: %v", len(diags), diags.Err())
		}
	}
}
