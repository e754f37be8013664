package schemacheck_test

import (
	"os"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"poolc.dev/poolc/compiler/cuefront"
	"poolc.dev/poolc/compiler/schemacheck"
	"poolc.dev/poolc/schema"
)

// The Go checker reads the schema instead of restating it; this test keeps
// the two honest by asking CUE itself, on the same documents, whether each
// one satisfies #File, and requiring the same verdict from Check.
func TestCheckerAgreesWithCUE(t *testing.T) {
	ctx := cuecontext.New()
	src, err := schema.Files.ReadFile("pool.cue")
	if err != nil {
		t.Fatal(err)
	}
	def := ctx.CompileBytes(src).LookupPath(cue.ParsePath("#File"))
	if def.Err() != nil {
		t.Fatal(def.Err())
	}
	example, err := os.ReadFile("../../examples/spark-lab/cue/spark-lab.cue")
	if err != nil {
		t.Fatal(err)
	}
	base := `pool: p: {
	node: n: {address: "n.lan", memory_gb: 64}
	model: m: {path: "/m.gguf", size_gb: 1, memory_gb: 2}
	lane: l: {model: "m", placement: ["n"], port: 8080}
	pod_pool: jobs: {image: "img", members: "a@h:3#k3d-reg:5000"}
	plugin: sim: {builtin: true, config: {anything: [1, "two", {three: 3}]}}
}
`
	cases := map[string]string{
		"spark-lab":            string(example),
		"base":                 base,
		"unknown field":        base + `pool: p: node: n: memroy_gb: 3`,
		"unknown top field":    base + `pools: {}`,
		"string for number":    strings.Replace(base, `memory_gb: 64`, `memory_gb: "64"`, 1),
		"negative memory":      strings.Replace(base, `memory_gb: 64`, `memory_gb: -1`, 1),
		"zero memory":          strings.Replace(base, `memory_gb: 64`, `memory_gb: 0`, 1),
		"residency enum":       base + `pool: p: lane: l: residency: "warm"`,
		"residency ok":         base + `pool: p: lane: l: residency: "preferred"`,
		"port range":           strings.Replace(base, `port: 8080`, `port: 0`, 1),
		"port fraction":        strings.Replace(base, `port: 8080`, `port: 80.5`, 1),
		"relative path":        strings.Replace(base, `"/m.gguf"`, `"m.gguf"`, 1),
		"missing address":      strings.Replace(base, `address: "n.lan", `, ``, 1),
		"uppercase name":       base + `pool: p: node: N: {address: "x", memory_gb: 1}`,
		"uppercase reference":  strings.Replace(base, `model: "m"`, `model: "M"`, 1),
		"ceiling zero":         base + `pool: p: guard: ceiling: 0`,
		"ceiling one":          base + `pool: p: guard: ceiling: 1`,
		"ceiling above one":    base + `pool: p: guard: ceiling: 1.5`,
		"reserve negative":     base + `pool: p: guard: reserve_gb: -1`,
		"node guard unknown":   base + `pool: p: node: n: guard: ceilng: 0.8`,
		"labels not strings":   base + `pool: p: node: n: labels: {a: 1}`,
		"bad sha256":           base + `pool: p: plugin: sim: sha256: "abc"`,
		"good sha256":          base + `pool: p: plugin: sim: sha256: "` + strings.Repeat("ab", 32) + `"`,
		"builtin not bool":     base + `pool: p: plugin: other: builtin: "yes"`,
		"members list":         strings.Replace(base, `members: "a@h:3#k3d-reg:5000"`, `members: ["a", "b:3"]`, 1),
		"members numbers":      strings.Replace(base, `members: "a@h:3#k3d-reg:5000"`, `members: [1]`, 1),
		"member block":         base + `pool: p: pod_pool: other: {image: "i", member: ctx: {capacity: 3, registry: "k3d-r:1"}}`,
		"member capacity zero": base + `pool: p: pod_pool: other: {image: "i", member: ctx: {capacity: 0}}`,
		"member registry":      base + `pool: p: pod_pool: other: {image: "i", member: ctx: {registry: "reg:1"}}`,
		"empty image":          strings.Replace(base, `image: "img"`, `image: ""`, 1),
		"state backend":        base + `pool: p: state: backend: "etcd"`,
		"profile override":     base + `pool: p: {profile: x: {cordon: ["n"], lane: l: residency: "keep-warm"}, active_profile: "x"}`,
		"profile bad field":    base + `pool: p: profile: x: lane: l: port: 1`,
		"no pool":              `x: 1`,
		"list for block":       base + `pool: p: guard: [1]`,
		"selector":             base + `pool: p: lane: s: {model: "m", selector: {class: "a"}, port: 1}`,
		"aliases not list":     base + `pool: p: lane: l: aliases: "chat"`,
		// The string rules: CUE's own regular expressions agree.
		"host upper case":   strings.Replace(base, `"n.lan"`, `"N.lan"`, 1),
		"host trailing dot": strings.Replace(base, `"n.lan"`, `"n.lan."`, 1),
		"host with port":    strings.Replace(base, `"n.lan"`, `"n.lan:22"`, 1),
		"host ipv6":         strings.Replace(base, `"n.lan"`, `"fe80::1"`, 1),
		"path dot dot":      strings.Replace(base, `"/m.gguf"`, `"/a/../m.gguf"`, 1),
		"path shell":        strings.Replace(base, `"/m.gguf"`, `"/m;id"`, 1),
		"image upper":       strings.Replace(base, `image: "img"`, `image: "Img"`, 1),
		"image full":        strings.Replace(base, `image: "img"`, `image: "ghcr.io:443/a/b_c:1.2@sha256:`+strings.Repeat("ab", 32)+`"`, 1),
		"registry port big": base + `pool: p: pod_pool: other: {image: "i", member: ctx: {registry: "k3d-r:65536"}}`,
		"context shell":     base + `pool: p: pod_pool: other: {image: "i", member: "$(id)": {}}`,
		"namespace dot":     base + `pool: p: pod_pool: jobs: namespace: "a.b"`,
		"name too long":     base + `pool: p: node: "` + strings.Repeat("n", 64) + `": {address: "x", memory_gb: 1}`,
		"args control":      base + `pool: p: model: m: args: ["a\nb"]`,
		"source url":        base + `pool: p: model: m: source: "https://w.lan/m.gguf"`,
		"source backtick":   base + "pool: p: model: m: source: \"https://w.lan/`id`\"",
		"source no host":    base + `pool: p: model: m: source: "https:///m.gguf"`,
		"source file":       base + `pool: p: model: m: source: "file:///srv/m.gguf"`,
		"source file rel":   base + `pool: p: model: m: source: "file://srv/m.gguf"`,
		"source file dots":  base + `pool: p: model: m: source: "file:///srv/../m.gguf"`,
		"source file quote": base + `pool: p: model: m: source: "file:///srv/m'.gguf"`,
		"source bare path":  base + `pool: p: model: m: source: "/srv/m.gguf"`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			v := ctx.CompileString(doc)
			if v.Err() != nil {
				t.Fatalf("the case itself does not compile: %v", v.Err())
			}
			cueErr := def.Unify(v).Validate(cue.Concrete(true))
			tr, diags := cuefront.Parse([]cuefront.Source{{Name: "doc.cue", Src: []byte(doc)}})
			if diags.HasErrors() {
				t.Fatalf("front end: %v", diags.Err())
			}
			goDiags := schemacheck.Check(tr)
			if (cueErr == nil) != !goDiags.HasErrors() {
				t.Errorf("CUE says %v; the checker says %v", cueErr, goDiags.Err())
			}
		})
	}
}
