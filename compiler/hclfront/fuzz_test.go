package hclfront

import (
	"os"
	"testing"

	"poolc.dev/poolc/internal/testing/fuzzcheck"
	"poolc.dev/poolc/pools"
)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and every
// finding it reports at a position must point into the file it was given.
func FuzzParse(f *testing.F) {
	if src, err := os.ReadFile("../../examples/spark-lab/spark-lab.hcl"); err == nil {
		f.Add(src)
	} else {
		f.Fatal(err)
	}
	for _, s := range []string{
		``,
		`# only a comment`,
		`pool "p" {}`,
		`pool "p" { node "a" { address = "a.lan"
 memory_gb = 8 } }`,
		`pool "p" {`,
		`pool "p" { node { } }`,
		`pool "p" { guard "x" { } }`,
		`pool "p" { guard {} guard {} }`,
		`pool "p" { x = [1, "a", {b = true}] }`,
		`pool "p" { x = {"a" = 1, a = 2} }`,
		`pool "p" { x = 1e999999 }`,
		`pool "p" { x = var.y }`,
		`pool "p" { x = "${1 + 2}" }`,
		`pool "p" { x = [for v in [1] : v] }`,
		`pool "p" { plugin "a" { config { a "b" "c" { d = null } } } }`,
		"pool \"p\" { x = \"\x00\xff\" }",
		`pool "p" { x = { (1) = 2 } }`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		const name = "pool.hcl"
		var diags pools.Diagnostics
		fuzzcheck.Within("Parse", src, func() { _, diags = Parse(name, src) })
		fuzzcheck.Positions(t, name, src, diags)
	})
}
