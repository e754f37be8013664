package orchestrate_test

import (
	"strings"
	"testing"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/pools"
)

// TestObservedMemory checks that a lane process holding more than the
// tolerance above its model's assumed memory is a warning naming the
// lane, node, both figures and where the assumption comes from, and that
// one within the tolerance, one of unknown memory and one of a model the
// configuration no longer holds are not.
func TestObservedMemory(t *testing.T) {
	p := &pools.Pool{Models: []pools.Model{
		{Name: "big", MemoryGB: 4, Declared: true},
		{Name: "est", MemoryGB: 2, Estimate: &pools.MemoryEstimate{GB: 2}},
	}}
	lane := func(name, model string, rss int64) pools.LaneState {
		return pools.LaneState{Name: name, Node: "a", Model: model, Port: 8080,
			Observed: &pools.ObservedProcess{PID: 42, ResidentBytes: rss}}
	}
	f := pools.Fleet{Lanes: []pools.LaneState{
		lane("over", "big", 5_100_000_000),     // 27.5% above the declared 4 GB
		lane("within", "big", 4_300_000_000),   // 7.5% above: within the tolerance
		lane("unknown", "big", 0),              // memory not read
		lane("estover", "est", 2_500_000_000),  // 25% above the estimated 2 GB
		lane("gone", "removed", 9_000_000_000), // its model is no longer configured
		{Name: "unobserved", Node: "a", Model: "big"},
	}}
	diags := orchestrate.ObservedMemory(p, f, compiler.MemoryTolerance)
	if len(diags) != 2 {
		t.Fatalf("got %d findings, want 2 (over, estover):\n%v", len(diags), diags)
	}
	for i, want := range []struct {
		path  string
		words []string
	}{
		{"model.big.memory_gb", []string{`lane "over" on node "a"`, "5.1 GB resident", "10%", "4.0 GB assumed", "(declared in memory_gb)"}},
		{"model.est", []string{`lane "estover" on node "a"`, "2.5 GB resident", "2.0 GB assumed", "(estimated from its GGUF header"}},
	} {
		d := diags[i]
		if d.Severity != pools.Warning || d.Code != "memory-above-assumed" || d.Path.String() != want.path {
			t.Errorf("finding %d: %v %s at %s, want a memory-above-assumed warning at %s", i, d.Severity, d.Code, d.Path, want.path)
		}
		for _, w := range want.words {
			if !strings.Contains(d.Message, w) {
				t.Errorf("finding %d does not say %q: %s", i, w, d.Message)
			}
		}
	}
	if d := orchestrate.ObservedMemory(p, f, 0.5); len(d) != 0 {
		t.Errorf("at a stated tolerance of 50%%, got %d findings, want none:\n%v", len(d), d)
	}
}
