package hclfront

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"pgregory.net/rapid"

	"poolc.dev/poolc/internal/poolgen"
)

// samePieces fails t unless src parsed in pieces of size bytes gives the
// body the parser gives the whole file, or is refused; it reports whether
// src was parsed in pieces.
func samePieces(t interface {
	Helper()
	Fatalf(string, ...any)
}, src []byte, size int) bool {
	t.Helper()
	body, ok := parseInPieces("f.hcl", src, size)
	if !ok {
		return false
	}
	f, diags := hclsyntax.ParseConfig(src, "f.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parsed in pieces, but the whole file has errors: %v\n%q", diags, src)
	}
	if !reflect.DeepEqual(f.Body, body) {
		t.Fatalf("the pieces' body differs from the whole file's\n%q", src)
	}
	return true
}

// Pool files, large and small, parse in pieces to the very tree the
// parser gives them whole, positions included, at every piece size.
func TestPiecesJoinToTheWholeFile(t *testing.T) {
	example, err := os.ReadFile("../../examples/spark-lab/spark-lab.hcl")
	if err != nil {
		t.Fatal(err)
	}
	var gen bytes.Buffer
	if err := poolgen.Write(&gen, poolgen.HCL, poolgen.Options{Nodes: 20, Lanes: 200, Members: 5, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	crlf := bytes.ReplaceAll(gen.Bytes(), []byte("\n"), []byte("\r\n"))
	noEOL := bytes.TrimRight(gen.Bytes(), "\n")
	twoBlocks := append(append(bytes.Clone(example), "\n# and another\n"...), gen.Bytes()...)
	tabs := bytes.ReplaceAll(gen.Bytes(), []byte("  "), []byte("\t"))
	unicode := bytes.ReplaceAll(gen.Bytes(), []byte(`".lan"`), []byte(`".lan # é 🚀 ü"`))
	for name, src := range map[string][]byte{
		"spark-lab": example, "generated": gen.Bytes(), "crlf": crlf, "no final newline": noEOL,
		"two blocks": twoBlocks, "tabs": tabs, "unicode in strings": unicode,
	} {
		for _, size := range []int{1, 50, 300, 1000, 4000, 1 << 20} {
			cut := samePieces(t, src, size)
			if !cut && size < len(src)/2 && name != "spark-lab" {
				t.Errorf("%s, pieces of %d bytes: not parsed in pieces", name, size)
			}
		}
	}
}

// A file the parser finds an error in is never taken from pieces: its
// diagnostics are the parser's own.
func TestPiecesWithAnErrorParseWhole(t *testing.T) {
	var gen bytes.Buffer
	if err := poolgen.Write(&gen, poolgen.HCL, poolgen.Options{Nodes: 20, Lanes: 200, Members: 5, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(gen.String(), "\n")
	for name, edit := range map[string]func(i int) string{
		"attribute set twice": func(i int) string { return "  active_profile = \"x\"\n" },
		"stray brace":         func(i int) string { return "}\n" },
		"operator left open":  func(i int) string { return "  x = 1 +\n" },
		"unclosed string":     func(i int) string { return "  x = \"a\n" },
		"open bracket":        func(i int) string { return "  x = [\n" },
	} {
		for _, at := range []int{3, len(lines) / 3, len(lines) / 2, len(lines) - 3} {
			end := len(lines) - 2 // the pool's closing brace
			src := []byte(strings.Join(lines[:at], "") + edit(at) + strings.Join(lines[at:end], "") + edit(at) + strings.Join(lines[end:], ""))
			if _, diags := hclsyntax.ParseConfig(src, "f.hcl", hcl.InitialPos); !diags.HasErrors() {
				t.Fatalf("%s at line %d: no error in the whole file", name, at)
			}
			if _, ok := parseInPieces("f.hcl", src, 500); ok {
				t.Errorf("%s at line %d: parsed in pieces", name, at)
			}
		}
	}
}

// Random bodies, mostly valid HCL and sometimes broken by a fragment
// that the scans read or give up on, either parse in pieces to the whole
// file's tree or are refused; valid ones larger than a few pieces are
// nearly all parsed in pieces.
func TestPiecesOfRandomSources(t *testing.T) {
	cutN, n := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		writeBody(t, &b, 0)
		src := b.String()
		if rapid.IntRange(0, 3).Draw(t, "broken") == 0 {
			at := rapid.IntRange(0, len(src)).Draw(t, "at")
			src = src[:at] + rapid.SampledFrom(fragments).Draw(t, "fragment") + src[at:]
		}
		if rapid.Bool().Draw(t, "crlf") {
			src = strings.ReplaceAll(src, "\n", "\r\n")
		}
		size := rapid.IntRange(1, 120).Draw(t, "size")
		cut := samePieces(t, []byte(src), size)
		if _, diags := hclsyntax.ParseConfig([]byte(src), "f.hcl", hcl.InitialPos); !diags.HasErrors() && len(src) > 3*size {
			n++
			if cut {
				cutN++
			}
		}
	})
	if cutN < n*9/10 {
		t.Errorf("only %d of %d valid random sources larger than three pieces were parsed in pieces", cutN, n)
	}
}

// writeBody writes a random body of items at the given depth.
func writeBody(t *rapid.T, b *strings.Builder, depth int) {
	indent := strings.Repeat("  ", depth)
	for range rapid.IntRange(0, 6-depth).Draw(t, "items") {
		name := rapid.SampledFrom([]string{"a", "x_1", "node", "lane", "y-z"}).Draw(t, "name")
		switch rapid.IntRange(0, 5).Draw(t, "item") {
		case 0: // a comment or a blank line
			b.WriteString(indent + rapid.SampledFrom([]string{"# c\n", "// c { [\n", "\n", "   \n"}).Draw(t, "comment"))
		case 1, 2:
			b.WriteString(indent + name + " = ")
			writeValue(t, b, depth)
			b.WriteString(rapid.SampledFrom([]string{"\n", " # c\n", "  \n"}).Draw(t, "eol"))
		case 3:
			if depth < 3 {
				b.WriteString(indent + name + rapid.SampledFrom([]string{"", ` "l"`, ` "l" "m"`, ` l`, ` "é {"`}).Draw(t, "labels") + " {\n")
				writeBody(t, b, depth+1)
				b.WriteString(indent + "}" + rapid.SampledFrom([]string{"\n", "  \n", " # c\n"}).Draw(t, "close") + "")
				continue
			}
			fallthrough
		default: // a one-line block
			b.WriteString(indent + name + ` "l" { k = 1 }` + "\n")
		}
	}
}

// writeValue writes a random expression, perhaps over several lines.
func writeValue(t *rapid.T, b *strings.Builder, depth int) {
	switch rapid.IntRange(0, 6).Draw(t, "value") {
	case 0:
		b.WriteString(rapid.SampledFrom([]string{"1", "2.5", "true", "null", "-3"}).Draw(t, "literal"))
	case 1:
		b.WriteString(rapid.SampledFrom([]string{`"s"`, `"{"`, `"}]"`, `"a # b"`, `"\""`, `"ü"`}).Draw(t, "string"))
	case 2:
		b.WriteString("[\n")
		for range rapid.IntRange(0, 3).Draw(t, "n") {
			writeValue(t, b, depth+1)
			b.WriteString(",\n")
		}
		b.WriteString("]")
	case 3:
		b.WriteString("{ k = 1, \"q\" = \"}\" }")
	case 4:
		b.WriteString("{\n  k = 1\n  m = [1,\n 2]\n}")
	case 5:
		b.WriteString("(1 +\n 2)")
	default:
		b.WriteString("[1, 2, \"x\"]")
	}
}

// FuzzParseInPieces: any input parsed in pieces gives the whole file's
// tree, or is parsed whole.
func FuzzParseInPieces(f *testing.F) {
	var gen bytes.Buffer
	if err := poolgen.Write(&gen, poolgen.HCL, poolgen.Options{Nodes: 4, Lanes: 12, Members: 2, Seed: 1}); err != nil {
		f.Fatal(err)
	}
	f.Add(gen.Bytes(), uint8(40))
	f.Add([]byte("pool \"p\" {\n  a = 1\n  b {\n  }\n}\n"), uint8(1))
	f.Add([]byte("a {\n  x = [\n1,\n]\n  y = 2\n} # c\nb = 3\n"), uint8(2))
	f.Fuzz(func(t *testing.T, src []byte, size uint8) {
		samePieces(t, src, int(size)+1)
	})
}
