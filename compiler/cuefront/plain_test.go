package cuefront

import (
	"os"
	"reflect"
	"testing"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/parser"

	"poolc.dev/poolc/compiler/tree"
)

// readBoth reads src as plain data and by CUE's evaluation.
func readBoth(t testing.TB, src string) (fast, slow *tree.Value, plainOK, evalOK bool) {
	syn, err := parser.ParseFile("pool.cue", src, parser.ParseComments)
	if err != nil || scan("pool.cue", []byte(src)) != nil {
		return nil, nil, false, false
	}
	fast, fdiags, plainOK := plainData([]*ast.File{syn})
	inst := build.NewContext().NewInstance("", nil)
	if err := inst.AddSyntax(syn); err != nil {
		return nil, nil, false, false
	}
	slow, sdiags := evaluate(inst)
	evalOK = slow != nil && len(sdiags) == 0
	if plainOK && len(fdiags) > 0 {
		t.Fatalf("plain data gave findings %v", fdiags)
	}
	return fast, slow, plainOK, evalOK
}

// clearRoot forgets the position of the root, which the compiler sets.
func clearRoot(v *tree.Value) *tree.Value {
	if v != nil {
		v.Pos = tree.Value{}.Pos
	}
	return v
}

// Plain data read from the syntax is the tree CUE's evaluation gives,
// positions included.
func TestPlainDataIsWhatCUEEvaluates(t *testing.T) {
	gen, err := os.ReadFile("../../examples/spark-lab/cue/spark-lab.cue")
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"pool": `package pool

pool: "p": {
	// a comment
	node: {
		"n": {address: "n.lan", memory_gb: 64, labels: {class: "x"}}
		m: {address: "m.lan", memory_gb: 6.5e1}
	}
	model: m: {path: "/m", size_gb: 1, memory_gb: 2, args: ["-a", "b"]}
	lane: l: {model: "m", placement: ["n"], port: 8081, x: null, y: true, z: -3, w: """
		multi
		line
		"""}
}
pool: p: node: n: guard: reserve_gb: 4
pool: p: lane: k: port: 1
`,
		"empty struct and list": `pool: p: {a: {}, b: [], c: [[1], {x: 1}]}`,
	} {
		fast, slow, plainOK, evalOK := readBoth(t, src)
		if !plainOK || !evalOK {
			t.Fatalf("%s: plain %v, evaluated %v", name, plainOK, evalOK)
		}
		if !reflect.DeepEqual(clearRoot(fast), clearRoot(slow)) {
			t.Errorf("%s: plain data and evaluation differ:\nplain: %s\neval:  %s", name, dump(fast), dump(slow))
		}
	}
	// What CUE must evaluate is left to it.
	for name, src := range map[string]string{
		"spark-lab":   string(gen),
		"reference":   "a: 1\nb: a\n",
		"conflict":    "a: 1\na: 2\n",
		"same scalar": "a: 1\na: 1\n",
		"definition":  "#A: 1\na: #A\n",
		"optional":    "a?: 1\n",
		"bytes":       "a: 'x'\n",
		"interpolate": "a: \"\\(1)\"\n",
		"import":      "import \"strings\"\na: strings.ToUpper(\"x\")\n",
	} {
		if _, _, plainOK, _ := readBoth(t, src); plainOK {
			t.Errorf("%s was read as plain data", name)
		}
	}
}

func dump(v *tree.Value) string {
	if v == nil {
		return "<nil>"
	}
	s := v.Kind.String() + "@" + v.Pos.String()
	switch v.Kind {
	case tree.Object:
		s += "{"
		for _, f := range v.Fields {
			s += f.Key + "@" + f.KeyPos.String() + ": " + dump(f.Value) + ", "
		}
		s += "}"
	case tree.List:
		s += "["
		for _, i := range v.Items {
			s += dump(i) + ", "
		}
		s += "]"
	case tree.String:
		s += " " + v.Str
	}
	return s
}

// FuzzPlainData: whatever plain data reads, CUE's evaluation reads the same.
func FuzzPlainData(f *testing.F) {
	// A child process per input would run a few inputs a second.
	f.Setenv(InProcessEnv, "1")
	for _, s := range []string{`pool: p: {a: 1, b: "x", c: [1, {d: true}]}`, "a: b: 1\na: c: 2\n", "a: {x: 1}\na: {y: 2}\n", `"a b": -1.5e3`, "a: [1,2]\na: [1,2]\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		fast, slow, plainOK, evalOK := readBoth(t, src)
		if !plainOK {
			return
		}
		if !evalOK {
			t.Fatalf("plain data read %q, which CUE refuses", src)
		}
		if !reflect.DeepEqual(clearRoot(fast), clearRoot(slow)) {
			t.Fatalf("%q: plain data and evaluation differ:\nplain: %s\neval:  %s", src, dump(fast), dump(slow))
		}
	})
}
