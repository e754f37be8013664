package compiler

import (
	"os"
	"testing"

	"poolc.dev/poolc/compiler/cuefront"

	"poolc.dev/poolc/internal/testing/fuzzcheck"
	"poolc.dev/poolc/pools"
)

// FuzzCompileHCL runs the whole pipeline on one arbitrary HCL file.
func FuzzCompileHCL(f *testing.F) {
	seedFuzz(f, "../examples/spark-lab/spark-lab.hcl",
		``,
		`# only comments
# and more`,
		`pool "p" {}`,
		`pool "p" {`,
		`pool "p" {} pool "q" {}`,
		`pool "p" { node "a" { address = "a.lan"
 memory_gb = 8 } }`,
		`pool "p" {
  node "n" { 
    address = "n.lan"
    memory_gb = 64
  }
  model "m" {
    path = "/m.gguf"
    size_gb = 1
    memory_gb = 80
  }
  lane "l" {
    model = "m"
    placement = ["n"]
    port = 8080
    aliases = ["a", "a"]
  }
  pod_pool "pp" { image = "i"
    members = "a@h:0#k3d-r:99999,,b"
  }
}`,
		`pool "p" { pod_pool "pp" { image = "i"
 members = [] } }`,
		`pool "p" { pod_pool "pp" { image = "i"
 member "c" { registry = "k3d-r:1" } } }`,
		`pool "p" { lane "l" { port = 1e999999 } }`,
		`pool "p" { lane "l" { port = -1 } }`,
		`pool "p" { plugin "x" { config { a = [1, {b = null}] } } }`,
		`pool "p" { profile "x" { lane "l" { residency = "keep-warm" } } }`,
		`pool "p" { nodes "a" {} }`,
		`pool "p" { model "m" { path = "/m.gguf"
 source = "file:///srv/m.gguf" } }`,
		`pool "p" { model "m" { path = "/m.gguf"
 source = "file:/srv/../m.gguf" } }`,
		"pool \"p\" { node \"\xff\" {} }",
	)
	f.Fuzz(func(t *testing.T, src []byte) { checkCompile(t, "pool.hcl", src) })
}

// FuzzCompileCUE runs the whole pipeline on one arbitrary CUE file.
func FuzzCompileCUE(f *testing.F) {
	// A child process per input would run a few inputs a second.
	f.Setenv(cuefront.InProcessEnv, "1")
	seedFuzz(f, "../examples/spark-lab/cue/spark-lab.cue",
		``,
		`// only comments
// and more`,
		`package pool`,
		`pool: p: {}`,
		`pool: p: {`,
		`pool: p: {}, pool: q: {}`,
		`pool: p: node: a: {address: "a.lan", memory_gb: 8}`,
		`pool: p: {
	node: n: {address: "n.lan", memory_gb: 64}
	model: m: {path: "/m.gguf", size_gb: 1, memory_gb: 80}
	lane: l: {model: "m", placement: ["n"], port: 8080, aliases: ["a", "a"]}
	pod_pool: pp: {image: "i", members: "a@h:0#k3d-r:99999,,b"}
}`,
		`pool: p: pod_pool: pp: {image: "i", members: []}`,
		`pool: p: lane: l: port: 1e999999`,
		`pool: p: lane: l: port: int`,
		`pool: p: lane: l: port: 1 & 2`,
		`pool: p: plugin: x: config: {a: [1, {b: null}]}`,
		`pool: p: model: m: {path: "/m.gguf", source: "file:///srv/m.gguf"}`,
		`pool: p: model: m: {path: "/m.gguf", source: "file:/srv/../m.gguf"}`,
		`import "nosuch.dev/pkg"
pool: p: pkg.x`,
		`import "strings"
pool: p: node: (strings.ToLower("A")): {address: "a", memory_gb: 1}`,
		`pool: p: {for i in [1, 2, 3] {node: "n\(i)": {address: "n", memory_gb: i}}}`,
		`#T: {a: #T}
pool: p: x: #T`,
		`pool: [string]: node: [string]: memory_gb: 8
pool: p: node: a: address: "a"`,
		"pool: p: node: \"\xff\": {}",
	)
	f.Fuzz(func(t *testing.T, src []byte) { checkCompile(t, "pool.cue", src) })
}

// seedFuzz adds the example file and the snippets to the corpus.
func seedFuzz(f *testing.F, example string, snippets ...string) {
	src, err := os.ReadFile(example)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(src)
	for _, s := range snippets {
		f.Add([]byte(s))
	}
}

// checkCompile compiles src as the one file name and checks what any
// input must give: no panic, every finding at a real line and column of
// that file, a Config or an error saying why not, and a pool when nothing
// is wrong.
func checkCompile(t *testing.T, name string, src []byte) {
	var cfg *Config
	var diags pools.Diagnostics
	fuzzcheck.Within("Compile", src, func() { cfg, diags = Compile([]File{{Name: name, Src: src}}) })
	fuzzcheck.Positions(t, name, src, diags)
	for _, d := range diags {
		if d.Pos.Line == 0 {
			t.Errorf("diagnostic %q has no line and column", d.Message)
		}
	}
	switch {
	case cfg == nil && !diags.HasErrors():
		t.Errorf("no Config and no error; diagnostics: %v", diags)
	case cfg != nil && !diags.HasErrors() && cfg.Pool == nil:
		t.Errorf("no errors but no pool")
	}
}
