package cuefront

import (
	"os"
	"testing"

	"poolc.dev/poolc/internal/testing/fuzzcheck"
	"poolc.dev/poolc/pools"
)

// FuzzParse feeds arbitrary bytes to Parse as one file: it must never
// panic or run away, and every finding it reports at a position must point
// into the file it was given.
func FuzzParse(f *testing.F) {
	// A child process per input would run a few inputs a second.
	f.Setenv(InProcessEnv, "1")
	if src, err := os.ReadFile("../../examples/spark-lab/cue/spark-lab.cue"); err == nil {
		f.Add(src)
	} else {
		f.Fatal(err)
	}
	for _, s := range []string{
		``,
		`// only a comment`,
		`package pool`,
		`pool: p: {}`,
		`pool: p: node: a: {address: "a.lan", memory_gb: 8}`,
		`pool: p: {`,
		`pool: p: x: 1 & 2`,
		`pool: p: x: int`,
		`pool: p: x: 1e999999`,
		`pool: p: x: [1, "a", {b: true}]`,
		`import "strings"
pool: p: x: strings.ToUpper("a")`,
		`import "nosuch.dev/pkg"
pool: p: x: pkg.y`,
		`pool: p: {for i in [1, 2] {"n\(i)": i}}`,
		`x: x + 1`,
		`a: b, b: a`,
		`#T: {a: #T}
pool: p: x: #T`,
		`pool: p: x: [for i in [1, 2, 3] for j in [1, 2, 3] {i * j}]`,
		"pool: p: x: \"\x00\xff\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		const name = "pool.cue"
		var diags pools.Diagnostics
		fuzzcheck.Within("Parse", src, func() { _, diags = Parse([]Source{{Name: name, Src: src}}) })
		fuzzcheck.Positions(t, name, src, diags)
	})
}
