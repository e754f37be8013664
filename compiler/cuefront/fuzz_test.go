package cuefront

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// slow is how long Parse may take on one fuzz input, far more than any
// pool file needs. Past it the input counts as a failure; a run that does
// not end crashes the test, so the fuzzer keeps the input.
const slow = 5 * time.Second

// FuzzParse feeds arbitrary bytes to Parse as one file: it must never
// panic or run away, and every finding it reports at a position must point
// into the file it was given.
func FuzzParse(f *testing.F) {
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
		start := time.Now()
		hung := time.AfterFunc(4*slow, func() { panic(fmt.Sprintf("Parse still running after %v on %q", 4*slow, src)) })
		_, diags := Parse([]Source{{Name: name, Src: src}})
		hung.Stop()
		if d := time.Since(start); d > slow {
			t.Errorf("Parse took %v", d)
		}
		lines := bytes.Count(src, []byte("\n")) + 1
		for _, d := range diags {
			if d.Pos == (pools.Pos{}) {
				continue
			}
			if d.Pos.File != name || d.Pos.Line < 1 || d.Pos.Col < 1 || d.Pos.Line > lines {
				t.Errorf("diagnostic %q at %+v: want a line and column of %s (%d lines)", d.Message, d.Pos, name, lines)
			}
		}
	})
}
