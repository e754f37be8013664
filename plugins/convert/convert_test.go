package convert

import (
	"testing"

	"poolc.dev/poolc/pools"
)

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
