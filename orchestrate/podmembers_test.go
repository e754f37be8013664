package orchestrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/plugins/kube"
	"poolc.dev/poolc/pools"
)

var podDigest = "sha256:" + strings.Repeat("d", 64)

const podPoolHCL = `pool "lab" {
  pod_pool "harness" {
    image      = "elanous-harness:v1"
    image_sync = "sim"
    members = "pool-node-b@node-b:2#k3d-reg-b:5051,pool-node-c@node-c:2#k3d-reg-c:5052,pool-node-d:1"
  }
}
`

// The members the state records as synced get their registry's copy of
// the pool's image; a member not synced yet gets none and the reason it
// may not run the image; one without a registry gets neither.
func TestMembersCarryTheCopyTheStateRecords(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pool.hcl"), []byte(podPoolHCL), 0o644); err != nil {
		t.Fatal(err)
	}
	st := &pools.State{Pool: "lab", Lineage: "test", Serial: 1}
	st.Fleet.Members = []pools.MemberState{
		{PodPool: "harness", Context: "pool-node-b", SSHHost: "node-b", Capacity: 2, Registry: "k3d-reg-b:5051", Image: "elanous-harness:v1@" + podDigest},
		{PodPool: "harness", Context: "pool-node-c", SSHHost: "node-c", Priority: 1, Capacity: 2, Registry: "k3d-reg-c:5052"},
		{PodPool: "harness", Context: "pool-node-d", Priority: 2, Capacity: 1, Image: "elanous-harness:v1"},
	}
	data, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "poolc.state.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	pp := pools.PodPool{Name: "harness", Image: "elanous-harness:v1", ImageSync: "sim", Members: []pools.Member{
		{Context: "pool-node-b", Capacity: 2, Registry: pools.Registry{Name: "k3d-reg-b", Port: 5051}},
		{Context: "pool-node-c", Capacity: 2, Registry: pools.Registry{Name: "k3d-reg-c", Port: 5052}},
		{Context: "pool-node-d", Capacity: 1},
	}}
	cfg, diags := compiler.Load([]string{dir})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	members, err := PodMembers(cfg, pp)
	if err != nil {
		t.Fatal(err)
	}
	want := []kube.ImageCopy{{From: "elanous-harness:v1", To: "k3d-reg-b:5051/elanous-harness@" + podDigest},
		{From: "elanous-harness:v1", Unverified: "no image-sync has verified elanous-harness:v1 in registry k3d-reg-c:5052 (run poolc apply; the last sync there failed or never ran)"}, {}}
	for i, m := range members {
		if m.Image != want[i] {
			t.Errorf("member %s: copy %+v, want %+v", m.Context, m.Image, want[i])
		}
	}
	// With no state yet, no member has a copy.
	os.Remove(filepath.Join(dir, "poolc.state.json"))
	if members, err = PodMembers(cfg, pp); err != nil || members[0].Image.To != "" || members[0].Image.Unverified == "" {
		t.Errorf("without a state: %+v, %v", members, err)
	}
	// A pod pool that copies no image reads no state: its Jobs pull the
	// image as given everywhere.
	pp.ImageSync = ""
	if members, err = PodMembers(cfg, pp); err != nil || members[0].Image != (kube.ImageCopy{}) {
		t.Errorf("without image_sync: %+v, %v", members, err)
	}
}
