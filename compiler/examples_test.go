package compiler

import (
	"reflect"
	"testing"

	"poolc.dev/poolc/pools"
)

// The example pool is written twice, in HCL and in CUE; both must load to
// the same IR and validate without findings.
func TestSparkLabIsTheSameInBothLanguages(t *testing.T) {
	hcl := mustLoad(t, "../examples/spark-lab")
	cue := mustLoad(t, "../examples/spark-lab/cue")
	if !reflect.DeepEqual(hcl, cue) {
		t.Fatalf("the HCL and CUE examples differ:\nHCL: %+v\nCUE: %+v", hcl, cue)
	}
	if hcl.Name != "spark-lab" || len(hcl.Nodes) != 4 || len(hcl.Lanes) != 9 || len(hcl.PodPools[0].Members) != 3 {
		t.Errorf("unexpected shape: %d nodes, %d lanes", len(hcl.Nodes), len(hcl.Lanes))
	}
}

func TestDefaultsComeFromTheSchema(t *testing.T) {
	p := mustLoad(t, "../examples/spark-lab")
	mac := p.Node("mac-studio")
	if mac.Guard != (pools.Guard{Ceiling: 0.90, ReserveGB: 16}) {
		t.Errorf("mac-studio guard = %+v, want the pool ceiling and its own reserve", mac.Guard)
	}
	if got := p.PodPools[0].Members[2]; got.Capacity != 1 || got.Context != "k3d-elanous-h1" {
		t.Errorf("third member = %+v", got)
	}
	cfg, diags := Compile([]File{{Name: "p.hcl", Src: []byte(`pool "p" {
  node "n" {
    address   = "n.lan"
    memory_gb = 64
  }
  model "m" {
    path      = "/m.gguf"
    size_gb   = 1
    memory_gb = 2
  }
  lane "l" {
    model     = "m"
    placement = ["n"]
    port      = 8080
  }
  pod_pool "jobs" {
    image = "img"
    member "ctx" {}
  }
}`)}})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	p = cfg.Pool
	if p.Guard != (pools.Guard{Ceiling: 0.90, ReserveGB: 8}) {
		t.Errorf("pool guard = %+v, want the schema defaults", p.Guard)
	}
	if p.Lanes[0].Residency != pools.OnDemand {
		t.Errorf("residency = %q, want on-demand", p.Lanes[0].Residency)
	}
	if m := p.PodPools[0].Members[0]; m.Capacity != pools.DefaultCapacity {
		t.Errorf("member capacity = %d, want %d", m.Capacity, pools.DefaultCapacity)
	}
	if p.PodPools[0].Namespace != "jobs" {
		t.Errorf("namespace = %q, want the pod pool's name", p.PodPools[0].Namespace)
	}
	if !reflect.DeepEqual(p.State, pools.StateBackend{Backend: "file", Path: "poolc.state.json"}) {
		t.Errorf("state = %+v", p.State)
	}
	for _, tg := range p.Targets() {
		if tg.Plugin != pools.DefaultPlugin {
			t.Errorf("%s is served by %q, want the default %q", tg.What, tg.Plugin, pools.DefaultPlugin)
		}
	}
	if n := p.Node("n"); n.Runtime != pools.DefaultPlugin || p.Gateway != pools.DefaultPlugin || p.PodPools[0].Cluster != pools.DefaultPlugin {
		t.Errorf("schema defaults: runtime %q, gateway %q, cluster %q; want %q", n.Runtime, p.Gateway, p.PodPools[0].Cluster, pools.DefaultPlugin)
	}
	if n := p.Node("n"); n.SSHPort != pools.DefaultSSHPort || n.SSHUser != "" {
		t.Errorf("node ssh = %s@:%d, want no user and port %d", n.SSHUser, n.SSHPort, pools.DefaultSSHPort)
	}
	if p.Node("n").Budget() != 56 {
		t.Errorf("budget = %v, want 56 (64 - 8 reserve)", p.Node("n").Budget())
	}
}

func mustLoad(t *testing.T, path string) *pools.Pool {
	t.Helper()
	cfg, diags := Load([]string{path})
	if len(diags) > 0 {
		t.Fatalf("%s: %v", path, diags.Err())
	}
	return cfg.Pool
}

// Member blocks keep the order written: it is their priority.
func TestMemberBlocksKeepTheirOrder(t *testing.T) {
	cfg, diags := Compile([]File{{Name: "p.hcl", Src: []byte(`pool "p" {
  pod_pool "jobs" {
    image = "img"
    member "zeta" {}
    member "alpha" {
      capacity = 3
    }
  }
}`)}})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	m := cfg.Pool.PodPools[0].Members
	if m[0].Context != "zeta" || m[1].Context != "alpha" || m[1].Capacity != 3 {
		t.Fatalf("members = %+v, want zeta then alpha", m)
	}
}

// The template example expands definitions, defaults, pattern constraints
// and comprehensions into a pool; what poolc reads is CUE's evaluated,
// defaulted value.
func TestCUETemplatesExpand(t *testing.T) {
	p := mustLoad(t, "../examples/cue-templates")
	if len(p.Nodes) != 9 || len(p.Lanes) != 11 || len(p.Models) != 5 {
		t.Fatalf("got %d nodes, %d lanes, %d models; want 9, 11, 5", len(p.Nodes), len(p.Lanes), len(p.Models))
	}
	if n := p.Node("spark-3"); n == nil || n.MemoryGB != 128 {
		t.Errorf("spark-3 = %+v, want the #Node default of 128 GB", n)
	}
	for _, l := range p.Lanes {
		if l.Name == "whisper-1" && (l.Residency != pools.OnDemand || len(l.Aliases) != 1 || l.Aliases[0] != "whisper-1") {
			t.Errorf("whisper-1 = %+v, want the #Lane defaults (on-demand, its own name as alias)", l)
		}
		if l.Name == "qwen3-27b-3" && l.Residency != pools.KeepWarm {
			t.Errorf("qwen3-27b-3 residency = %q, want the table's keep-warm", l.Residency)
		}
	}
}
