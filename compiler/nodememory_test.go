package compiler

import (
	"slices"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// headroomPool has a 64 GB node (budget 56 GB) that runs lane "old"
// (30 GB) and is to run lane "new" (20 GB) instead; extra is written in
// the node block.
func headroomPool(extra string) File {
	return File{Name: "p.hcl", Src: []byte(`pool "p" {
  node "n" {
    address   = "n.lan"
    memory_gb = 64
    ` + extra + `
  }
  model "m" {
    path      = "/models/m.gguf"
    size_gb   = 10
    memory_gb = 20
  }
  lane "new" {
    model     = "m"
    residency = "keep-warm"
    placement = ["n"]
    port      = 8081
  }
}
`)}
}

func startWaitsForStop(t *testing.T, extra string) bool {
	t.Helper()
	cfg, diags := Compile([]File{headroomPool(extra)})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	current := &pools.State{Pool: "p", Fleet: pools.Fleet{
		Nodes: []pools.NodeState{{Name: "n"}},
		Lanes: []pools.LaneState{{Name: "old", Node: "n", Model: "m", Port: 8080, Residency: pools.KeepWarm, Path: "/models/m.gguf", MemoryGB: 30, Loaded: true}},
	}}
	p, err := Plan(cfg, current, PlanOptions{Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	var start, stop *pools.Step
	for i, s := range p.Steps {
		switch {
		case s.Kind == pools.StepStart && s.Lane.Name == "new":
			start = &p.Steps[i]
		case s.Kind == pools.StepStop && s.Lane.Name == "old":
			stop = &p.Steps[i]
		}
	}
	if start == nil || stop == nil {
		t.Fatalf("no start of new or stop of old in %+v", p.Steps)
	}
	return slices.Contains(start.DependsOn, stop.ID)
}

// 30 GB running and 20 GB starting fit a 56 GB budget together; with a
// load headroom of 10 GB the start's peak does not, and it waits for the
// stop.
func TestLoadHeadroomOrdersAStartAfterAStop(t *testing.T) {
	if startWaitsForStop(t, "") {
		t.Errorf("without load_headroom_gb the start waits for the stop; 30 + 20 GB fit 56 GB")
	}
	if !startWaitsForStop(t, "load_headroom_gb = 10") {
		t.Errorf("with load_headroom_gb = 10 the start does not wait for the stop: 30 + 20 + 10 GB pass 56 GB")
	}
}

// A Mac's GPU working set caps its budget, in every rule that counts
// memory, and the budget says so.
func TestGPUWorkingSetCapsTheBudget(t *testing.T) {
	cfg, diags := Compile([]File{headroomPool("gpu_working_set_gb = 18")})
	if !diags.HasErrors() {
		t.Fatal("a 20 GB keep-warm lane on a node whose GPU working set is 18 GB: no finding")
	}
	if msg := diags.Err().Error(); !strings.Contains(msg, "budget 18 GB (GPU working set of 64 GB)") {
		t.Errorf("finding %q does not name the capped budget", msg)
	}
	cfg, diags = Compile([]File{headroomPool("gpu_working_set_gb = 47.4")})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	if n := cfg.Pool.Nodes[0]; n.Budget() != 47.4 || n.LoadHeadroomGB != 0 {
		t.Errorf("budget %v, load headroom %v; want 47.4 and the default 0", n.Budget(), n.LoadHeadroomGB)
	}
	_, diags = Compile([]File{headroomPool("gpu_working_set_gb = 65")})
	if !diags.HasErrors() || !strings.Contains(diags.Err().Error(), `p.hcl:5:26: node "n": gpu_working_set_gb 65 GB is more than its memory_gb 64 GB`) {
		t.Errorf("working set above memory: %v", diags.Err())
	}
}
