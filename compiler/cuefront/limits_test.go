package cuefront

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/compiler/tree"
)

func parseOne(src string) ([]string, *tree.Value) {
	doc, diags := Parse([]Source{{Name: "pool.cue", Src: []byte(src)}})
	var out []string
	for _, d := range diags {
		out = append(out, d.Code+" "+d.String())
	}
	return out, doc
}

// Input nested far past tree.MaxNesting must get an error, not exhaust the
// stack or run for minutes: CUE's parser stops brackets at 10,000 levels
// but not chains of operators or selectors, which crashed poolc (5,000,000
// in a 10 MB file), nor of labels (200,000 took a minute).
func TestDeepNestingIsAnError(t *testing.T) {
	const n = 200_000
	for name, src := range map[string]string{
		"labels":         "x: " + strings.Repeat("a: ", n) + "1",
		"sum":            "x: " + strings.Repeat("1+", n) + "1",
		"selectors":      "a: b: 1\nx: a" + strings.Repeat(".b", n),
		"disjunction":    "x: " + strings.Repeat("1 | ", n) + "1",
		"lists":          "x: " + strings.Repeat("[", n) + strings.Repeat("]", n),
		"interpolations": "x: " + strings.Repeat(`"\(`, n) + "1" + strings.Repeat(`)"`, n),
	} {
		diags, _ := parseOne("pool: p: {}\n" + src + "\n")
		if len(diags) != 1 || !strings.HasPrefix(diags[0], "too-deep pool.cue:") {
			t.Errorf("%s: got %v, want one too-deep error", name, diags)
		}
	}
}

// Nesting up to the limit, interpolations included, is read as usual.
func TestNestingWithinTheLimit(t *testing.T) {
	n := tree.MaxNesting / 2
	src := "pool: p: {}\nx: " + strings.Repeat(`"(\(`, n) + "1" + strings.Repeat(`))"`, n) + "\n"
	if diags, doc := parseOne(src); len(diags) != 0 || doc.Get("x") == nil {
		t.Fatal(diags)
	}
}

func TestNumbersOutOfRange(t *testing.T) {
	for _, tc := range []struct{ num, at string }{
		{"1e999999", "pool.cue:1:13"}, // CUE itself reads it as 1
		{"-1e-999999", "pool.cue:1:14"},
		{"1e400", "pool.cue:1:13"},
		{"1e200 * 1e200", "pool.cue:1:13"},
	} {
		diags, _ := parseOne("pool: p: x: " + tc.num + "\n")
		if len(diags) != 1 || !strings.Contains(diags[0], tc.at+": number") || !strings.Contains(diags[0], "out of range") {
			t.Errorf("%s: got %v, want an out-of-range error at %s", tc.num, diags, tc.at)
		}
	}
}

// A few lines can describe more values than poolc can read: each level
// doubles them. Reading stops at MaxValues with an error.
func TestTooManyValues(t *testing.T) {
	var b strings.Builder
	b.WriteString("pool: p: x: a0\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "a%d: [a%d, a%d]\n", i, i+1, i+1)
	}
	b.WriteString("a40: 1\n")
	// A loaded machine may take longer than the default time limit to
	// get there; this test is about the count.
	defer func(d time.Duration) { MaxEvalTime = d }(MaxEvalTime)
	MaxEvalTime = 5 * time.Minute
	diags, _ := parseOne(b.String())
	if len(diags) != 1 || !strings.HasPrefix(diags[0], "too-large pool.cue:") {
		t.Fatalf("got %v, want one too-large error", diags)
	}
}

func TestImportsOutsideTheStandardLibrary(t *testing.T) {
	diags, _ := parseOne("import \"example.com/x\"\n\npool: p: x.y\n")
	want := `import pool.cue:1:8: cannot import "example.com/x": pool files may import CUE's standard library (strings, list, math, ...) but no other package`
	if len(diags) != 1 || diags[0] != want {
		t.Fatalf("got %q, want %q", diags, want)
	}
	if diags, _ := parseOne("import \"strings\"\n\npool: p: x: strings.ToUpper(\"a\")\n"); len(diags) != 0 {
		t.Fatal(diags)
	}
}

// CUE gives some errors no position; they are placed at their path.
func TestErrorsWithoutPositionGetTheirPath(t *testing.T) {
	for src, at := range map[string]string{
		"pool: p: {}\nB: B\n":               "pool.cue:2:1",
		"pool: p: {}\n#T: {a: #T}\nx: #T\n": "pool.cue:2:6",
	} {
		diags, _ := parseOne(src)
		if len(diags) == 0 || !strings.Contains(diags[0], " "+at+": ") {
			t.Errorf("%q: got %v, want an error at %s", src, diags, at)
		}
	}
}
