package convert

import (
	"testing"

	"poolc.dev/poolc/pools"
)

// TestInventoryGivesTheGatewayEveryNode checks that the gateway's plugin
// learns every node of the pool (to name the node of a lane address),
// while a runtime plugin's nodes stay the ones it runs, and that lanes
// carry their residency under the active profile.
func TestInventoryGivesTheGatewayEveryNode(t *testing.T) {
	pool := &pools.Pool{
		Name: "lab", Gateway: "haproxy", ActiveProfile: "lean",
		Nodes: []pools.Node{
			{Name: "a", Address: "10.0.0.1", SSHPort: 2222, Runtime: "llama"},
			{Name: "b", Address: "10.0.0.2", Runtime: "sim"},
		},
		Models:   []pools.Model{{Name: "m", Path: "/models/m.gguf"}},
		Lanes:    []pools.Lane{{Name: "chat", Model: "m", Residency: pools.KeepWarm, Placement: []string{"a"}, Port: 8081}},
		Aliases:  []pools.Alias{{Name: "chat", Lane: "chat"}},
		Profiles: []pools.Profile{{Name: "lean", Lanes: []pools.LaneOverride{{Lane: "chat", Residency: pools.OnDemand}}}},
	}
	gw := Inventory(pool, "haproxy", nil)
	if !gw.Gateway || len(gw.Nodes) != 0 || len(gw.GatewayNodes) != 2 {
		t.Fatalf("the gateway's inventory is %+v; want no nodes of its own and both nodes as gateway nodes", gw)
	}
	if a := gw.GatewayNodes[0]; a.Name != "a" || a.Address != "10.0.0.1" || a.SSHPort != 2222 {
		t.Errorf("gateway node a is %+v; want address 10.0.0.1, SSH port 2222", a)
	}
	if len(gw.Lanes) != 1 || gw.Lanes[0].Residency != string(pools.OnDemand) {
		t.Errorf("the gateway's lanes are %+v; want chat, on-demand under profile lean", gw.Lanes)
	}
	rt := Inventory(pool, "llama", nil)
	if rt.Gateway || len(rt.GatewayNodes) != 0 || len(rt.Nodes) != 1 || rt.Nodes[0].Name != "a" || len(rt.Lanes) != 1 || len(rt.Models) != 1 {
		t.Errorf("llama's inventory is %+v; want node a, lane chat and model m, no gateway nodes", rt)
	}
	if sim := Inventory(pool, "sim", nil); len(sim.Nodes) != 1 || sim.Nodes[0].Name != "b" || len(sim.Lanes) != 0 {
		t.Errorf("sim's inventory is %+v; want node b and no lane (chat may run on a only)", sim)
	}
}

// TestInventoryGivesLeavingMembersToTheirClusterPlugin: a member leaving
// the pool goes to its pod pool's cluster plugin only, with the pod
// pool's namespace; the image-sync plugin and others do not get it.
func TestInventoryGivesLeavingMembersToTheirClusterPlugin(t *testing.T) {
	pool := &pools.Pool{Name: "p", PodPools: []pools.PodPool{{Name: "harness", Namespace: "jobs", Cluster: "kube", ImageSync: "image-sync",
		Members: []pools.Member{{Context: "a", Capacity: 2}}}}}
	leaving := []pools.MemberState{
		{PodPool: "harness", Context: "b", Priority: 1, Capacity: 3},
		{PodPool: "gone", Context: "c", Capacity: 1},
	}
	kube := Inventory(pool, "kube", leaving)
	if len(kube.Members) != 1 || kube.Members[0].Context != "a" {
		t.Errorf("kube's members: %+v, want a", kube.Members)
	}
	if len(kube.Leaving) != 1 || kube.Leaving[0].Context != "b" || kube.Leaving[0].Namespace != "jobs" || kube.Leaving[0].Capacity != 3 {
		t.Errorf("kube's leaving members: %+v, want b in namespace jobs with capacity 3", kube.Leaving)
	}
	if sync := Inventory(pool, "image-sync", leaving); len(sync.Members) != 1 || len(sync.Leaving) != 0 {
		t.Errorf("image-sync's inventory: %+v, want member a and none leaving", sync)
	}
}
