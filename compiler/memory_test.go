package compiler

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"poolc.dev/poolc/compiler/memest"
	"poolc.dev/poolc/internal/testing/gguftest"
	"poolc.dev/poolc/pools"
)

// qwen3 is an 8B-shaped model: about 17.6 GB of F16 weights, a KV cache of
// 144 kB per token.
var qwen3 = gguftest.Model{Arch: "qwen3", Context: 40960, Embedding: 4096, FeedForward: 12288, Layers: 36, Heads: 32, KVHeads: 8, Vocab: 151936}

func writeModel(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "qwen3-8b.gguf")
	if err := qwen3.Write(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// memPool is a one-model pool in both languages; memory is the model's
// memory_gb line ("" for none), args its args.
func memPool(lang Language, source, memory, args string) File {
	if lang == CUE {
		if memory != "" {
			memory = "memory_gb: " + memory
		}
		return File{Name: "p.cue", Src: []byte(fmt.Sprintf(`pool: p: {
	node: n: {
		address:   "n.lan"
		memory_gb: 128
	}
	model: m: {
		path:    "/models/m.gguf"
		source:  %q
		size_gb: 17
		%s
		args: [%s]
	}
	lane: l: {
		model:     "m"
		residency: "keep-warm"
		placement: ["n"]
		port:      8080
	}
}
`, source, memory, args))}
	}
	if memory != "" {
		memory = "memory_gb = " + memory
	}
	return File{Name: "p.hcl", Src: []byte(fmt.Sprintf(`pool "p" {
  node "n" {
    address   = "n.lan"
    memory_gb = 128
  }
  model "m" {
    path    = "/models/m.gguf"
    source  = %q
    size_gb = 17
    %s
    args    = [%s]
  }
  lane "l" {
    model     = "m"
    residency = "keep-warm"
    placement = ["n"]
    port      = 8080
  }
}
`, source, memory, args))}
}

// Without memory_gb, the model's memory is the estimate from its header,
// in both languages, and it is what the placer counts.
func TestMemoryOmittedIsEstimated(t *testing.T) {
	src := "file://" + writeModel(t)
	for _, lang := range []Language{HCL, CUE} {
		cfg, diags := CompileWith([]File{memPool(lang, src, "", `"-c", "8192"`)}, Options{Estimator: &memest.Estimator{}})
		if len(diags) > 0 {
			t.Fatalf("%s: %v", lang, diags.Err())
		}
		m := cfg.Pool.Models[0]
		if m.Declared || m.Estimate == nil || m.MemoryGB != m.Estimate.GB || m.MemoryGB < 17 || m.MemoryGB > 22 {
			t.Fatalf("%s: model %+v, estimate %+v", lang, m, m.Estimate)
		}
		if got := Desired(cfg).Fleet.Lanes[0].MemoryGB; got != m.MemoryGB {
			t.Errorf("%s: the placed lane counts %v GB, the model %v", lang, got, m.MemoryGB)
		}
		t.Logf("%s: %s estimated (%s; %s)", lang, pools.GB(m.MemoryGB), m.Estimate.Args, m.Estimate.Parts)
	}
}

// A declared memory_gb below the estimate is a finding naming both
// numbers and the arguments; a warning, or an error when strict.
func TestDeclaredBelowTheEstimate(t *testing.T) {
	src := "file://" + writeModel(t)
	check := func(memory, args string, opt Options) pools.Diagnostics {
		t.Helper()
		opt.Estimator, opt.CheckDeclared = &memest.Estimator{}, true
		_, diags := CompileWith([]File{memPool(HCL, src, memory, args)}, opt)
		return diags
	}
	if d := check("24", `"-c", "8192"`, Options{}); len(d) > 0 {
		t.Errorf("24 GB declared for ctx 8192 (estimate 20.1 GB): %v", d.Err())
	}
	if d := check("18.5", `"-c", "8192"`, Options{}); len(d) > 0 {
		t.Errorf("18.5 GB declared for ctx 8192 (estimate 20.1 GB, within the tolerance): %v", d.Err())
	}
	d := check("20", `"-c", "131072"`, Options{})
	if len(d) != 1 || d[0].Severity != pools.Warning || d[0].Code != "memory-below-estimate" {
		t.Fatalf("20 GB declared for ctx 131072: %v", d)
	}
	msg := d[0].String()
	for _, want := range []string{"p.hcl:10:17", "memory_gb 20 GB", "47.06 GB", "ctx 131072", "4 slots (default)", "KV 19.33 GB"} {
		if !strings.Contains(msg, want) {
			t.Errorf("finding %q does not say %q", msg, want)
		}
	}
	t.Log(msg)
	if d := check("20", `"-c", "131072"`, Options{StrictMemory: true}); !d.HasErrors() {
		t.Errorf("strict: %v, want an error", d)
	}
	// Without CheckDeclared (Load's default) a declared value is taken as is.
	if _, d := CompileWith([]File{memPool(HCL, src, "20", `"-c", "131072"`)}, DefaultOptions()); len(d) > 0 {
		t.Errorf("default options: %v", d.Err())
	}
}

// A model without memory_gb whose header poolc cannot read is an error at
// the model, saying why: unknown is not absent.
func TestMemoryUnknown(t *testing.T) {
	for _, tc := range []struct {
		source string
		opt    Options
		want   string
	}{
		{"nas.lan:/srv/m.gguf", DefaultOptions(), `p.hcl:6:9: model "m": memory_gb is not declared and cannot be estimated: its source "nas.lan:/srv/m.gguf" is read by the node`},
		{"file:///nonexistent/m.gguf", DefaultOptions(), `not a GGUF header poolc can read`},
		{"file:///nonexistent/m.gguf", Options{}, `this load makes no estimates: declare memory_gb`},
	} {
		_, d := CompileWith([]File{memPool(HCL, tc.source, "", "")}, tc.opt)
		if !d.HasErrors() || !strings.Contains(d.Err().Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.source, d.Err(), tc.want)
		}
	}
}
