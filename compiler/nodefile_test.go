package compiler

import (
	"fmt"
	"strings"
	"testing"

	"poolc.dev/poolc/compiler/memest"
)

// nodePool is a one-model pool whose node the built-in llama actuator
// runs with config (HCL attributes): the model's source is host:/path,
// which only the node reaches, and its path is where the node holds the
// prefetched file.
func nodePool(path, node, config string) File {
	return File{Name: "p.hcl", Src: []byte(fmt.Sprintf(`pool "p" {
  node "n" {
    %s
    memory_gb = 128
    runtime   = "llama"
  }
  model "m" {
    path    = %q
    source  = "nas.lan:/srv/qwen3-8b.gguf"
    size_gb = 17
    args    = ["-c", "8192"]
  }
  lane "l" {
    model     = "m"
    residency = "keep-warm"
    placement = ["n"]
    port      = 8080
  }
  plugin "llama" {
    builtin = true
    config = {
      %s
    }
  }
}
`, node, path, config))}
}

// A model without memory_gb whose source only the node reaches is
// estimated from the prefetched copy on its lane's node (here the llama
// actuator's local node: this machine), the same number the file gives
// when read directly.
func TestMemoryOfAModelOnlyItsNodeHoldsIsReadThere(t *testing.T) {
	path := writeModel(t)
	cfg, diags := CompileWith([]File{nodePool(path, `address = "127.0.0.1"`, "local = true")}, Options{Estimator: &memest.Estimator{}})
	if len(diags) > 0 {
		t.Fatal(diags.Err())
	}
	direct, diags := CompileWith([]File{memPool(HCL, "file://"+path, "", `"-c", "8192"`)}, Options{Estimator: &memest.Estimator{}})
	if len(diags) > 0 {
		t.Fatal(diags.Err())
	}
	m := cfg.Pool.Models[0]
	if m.Estimate == nil || m.MemoryGB != direct.Pool.Models[0].MemoryGB {
		t.Fatalf("model %+v, estimate %+v; want %v GB as read directly", m, m.Estimate, direct.Pool.Models[0].MemoryGB)
	}
	t.Logf("estimated from the node's copy: %v GB (%s)", m.MemoryGB, m.Estimate.Parts)

	// A node without the file: the error names the node and the path.
	_, diags = CompileWith([]File{nodePool("/nonexistent/m.gguf", `address = "127.0.0.1"`, "local = true")}, Options{Estimator: &memest.Estimator{}})
	if !diags.HasErrors() || !strings.Contains(diags.Err().Error(), "node n:") || !strings.Contains(diags.Err().Error(), "/nonexistent/m.gguf") {
		t.Errorf("a node without the file: %v", diags.Err())
	}
}
