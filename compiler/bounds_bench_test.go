package compiler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/poolgen"
)

// bigPool is a generated pool of about 15 MiB in HCL (14 MiB in CUE), just
// under the 16 MiB limit of one pool.
var bigPool = poolgen.Options{Nodes: 8000, Lanes: 82000, Members: 400, Seed: 1}

func BenchmarkLoad15MiBHCL(b *testing.B) { benchBig(b, poolgen.HCL) }

func BenchmarkLoad15MiBCUE(b *testing.B) { benchBig(b, poolgen.CUE) }

func benchBig(b *testing.B, lang poolgen.Language) {
	path := filepath.Join(b.TempDir(), "big."+string(lang))
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := poolgen.Write(f, lang, bigPool); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	benchFile(b, path)
}

// attributes100k writes one block of 100,000 attributes, the case that
// once took a minute: attributes sorted by insertion in HCL, fields found
// by linear search in CUE's evaluator.
func attributes100k(lang compiler.Language) string {
	var s strings.Builder
	if lang == compiler.HCL {
		s.WriteString("pool \"p\" {\n  plugin \"sim\" {\n    builtin = true\n    config {\n")
		for i := range 100_000 {
			fmt.Fprintf(&s, "      a%06d = %d\n", i, i)
		}
		s.WriteString("    }\n  }\n}\n")
		return s.String()
	}
	s.WriteString("pool: p: plugin: sim: {\n  builtin: true\n  config: {\n")
	for i := range 100_000 {
		fmt.Fprintf(&s, "    a%06d: %d\n", i, i)
	}
	s.WriteString("  }\n}\n")
	return s.String()
}

func BenchmarkLoad100kAttributesHCL(b *testing.B) { bench100k(b, compiler.HCL) }

func BenchmarkLoad100kAttributesCUE(b *testing.B) { bench100k(b, compiler.CUE) }

func bench100k(b *testing.B, lang compiler.Language) {
	path := filepath.Join(b.TempDir(), "attrs."+string(lang))
	if err := os.WriteFile(path, []byte(attributes100k(lang)), 0o644); err != nil {
		b.Fatal(err)
	}
	benchFile(b, path)
}

// benchFile times compiler.Load of one file that must load without errors.
func benchFile(b *testing.B, path string) {
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cfg, diags := compiler.Load([]string{path})
		if diags.HasErrors() || cfg == nil {
			b.Fatalf("%d findings: %v", len(diags), diags.Err())
		}
	}
}
