package synced

import (
	"strings"
	"testing"

	"poolc.dev/poolc/plugins/kube"
	"poolc.dev/poolc/pools"
)

// A member the fleet records as synced gets its registry's copy of the
// image; a member not synced yet gets none and the reason it may not run
// the image; one without a registry gets neither.
func TestWithCopiesGivesTheCopyTheFleetRecords(t *testing.T) {
	digest := "sha256:" + strings.Repeat("d", 64)
	pp := pools.PodPool{Name: "harness", Image: "elanous-harness:v1", ImageSync: "sim", Members: []pools.Member{
		{Context: "pool-node-b", Capacity: 2, Registry: pools.Registry{Name: "k3d-reg-b", Port: 5051}},
		{Context: "pool-node-c", Capacity: 2, Registry: pools.Registry{Name: "k3d-reg-c", Port: 5052}},
		{Context: "pool-node-d", Capacity: 1},
	}}
	fleet := pools.Fleet{Members: []pools.MemberState{
		{PodPool: "harness", Context: "pool-node-b", SSHHost: "node-b", Capacity: 2, Registry: "k3d-reg-b:5051", Image: "elanous-harness:v1@" + digest},
		{PodPool: "harness", Context: "pool-node-c", SSHHost: "node-c", Priority: 1, Capacity: 2, Registry: "k3d-reg-c:5052"},
		{PodPool: "harness", Context: "pool-node-d", Priority: 2, Capacity: 1, Image: "elanous-harness:v1"},
	}}
	want := []kube.ImageCopy{{From: "elanous-harness:v1", To: "k3d-reg-b:5051/elanous-harness@" + digest},
		{From: "elanous-harness:v1", Unverified: "no image-sync has verified elanous-harness:v1 in registry k3d-reg-c:5052 (run poolc apply; the last sync there failed or never ran)"}, {}}
	for i, m := range WithCopies(kube.Members(pp), pp.Image, fleet) {
		if m.Image != want[i] {
			t.Errorf("member %s: copy %+v, want %+v", m.Context, m.Image, want[i])
		}
	}
}
