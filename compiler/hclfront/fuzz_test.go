package hclfront

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
		start := time.Now()
		hung := time.AfterFunc(4*slow, func() { panic(fmt.Sprintf("Parse still running after %v on %q", 4*slow, src)) })
		_, diags := Parse(name, src)
		hung.Stop()
		if d := time.Since(start); d > slow {
			t.Errorf("Parse took %v", d)
		}
		checkPositions(t, name, src, diags)
	})
}

// checkPositions fails the test when a diagnostic has a position that is
// not a line and column of the named file.
func checkPositions(t *testing.T, name string, src []byte, diags pools.Diagnostics) {
	t.Helper()
	lines := bytes.Count(src, []byte("\n")) + 1
	for _, d := range diags {
		if d.Pos == (pools.Pos{}) {
			continue
		}
		if d.Pos.File != name || d.Pos.Line < 1 || d.Pos.Col < 1 || d.Pos.Line > lines {
			t.Errorf("diagnostic %q at %+v: want a line and column of %s (%d lines)", d.Message, d.Pos, name, lines)
		}
	}
}
