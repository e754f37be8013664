// Package fuzzcheck holds the checks every fuzz target of poolc's front
// ends makes, whatever the input: no hang, and findings that point into
// the file they were given.
package fuzzcheck

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// HangLimit is how long one fuzz input may take before it counts as a
// hang: far more than any pool file needs, so only a real hang trips it.
const HangLimit = 20 * time.Second

// Within runs f and panics if it is still running after HangLimit, so the
// fuzzer records the input that hung (a test that never returns would be
// killed without it).
func Within(what string, src []byte, f func()) {
	hung := time.AfterFunc(HangLimit, func() {
		panic(fmt.Sprintf("%s still running after %v on %q", what, HangLimit, src))
	})
	defer hung.Stop()
	f()
}

// Positions fails t when a diagnostic has a position that is not a line
// and column of the file named name, whose content is src.
func Positions(t testing.TB, name string, src []byte, diags pools.Diagnostics) {
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
