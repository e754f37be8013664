package pools

import (
	"encoding/json"
	"testing"
)

// The state records who serves each target; once a node and a pod pool
// leave the pool, their records stay while the fleet holds something of
// them, route their steps to the recorded plugin, and go once nothing is
// left.
func TestServedRecordsOutliveTheirTargets(t *testing.T) {
	pool := &Pool{
		Nodes:    []Node{{Name: "a", Address: "a.lan", SSHUser: "ops", SSHPort: 2222, Runtime: "llama"}, {Name: "b", Address: "b.lan"}},
		Gateway:  "haproxy",
		PodPools: []PodPool{{Name: "jobs", Namespace: "jobs-ns", PodMemoryGB: 2, Cluster: "kube", ImageSync: "image-sync"}},
	}
	st := &State{Fleet: Fleet{
		Lanes:   []LaneState{{Name: "chat", Node: "a", Port: 8080}},
		Members: []MemberState{{PodPool: "jobs", Context: "k1"}},
		Routes:  []Route{{Alias: "chat", Lane: "chat", Node: "a"}},
	}}
	if !st.RecordServed(pool) {
		t.Fatal("the first records are not a change")
	}
	if st.RecordServed(pool) {
		t.Error("recording the same pool again is a change")
	}
	stop := Step{ID: "stop:chat@a", Kind: StepStop, Lane: &LaneState{Name: "chat", Node: "a", Port: 8080}}
	remove := Step{ID: "member-remove:jobs/k1", Kind: StepMemberRemove, Member: &MemberState{PodPool: "jobs", Context: "k1"}}
	if pool.StepPlugin(stop) != "llama" || pool.StepPlugin(remove) != "kube" {
		t.Fatalf("StepPlugin: %q, %q", pool.StepPlugin(stop), pool.StepPlugin(remove))
	}

	// Node a and the pod pool leave the config.
	gone := &Pool{Nodes: []Node{{Name: "b", Address: "b.lan"}}, Gateway: "haproxy"}
	left := st.Left(gone)
	if len(left) != 2 || left[0].Role != "cluster" || left[1].Role != "runtime" {
		t.Fatalf("Left = %+v, want the pod pool's cluster and node a (not the image sync, which plans no step for leaving members)", left)
	}
	if gone.StepPlugin(stop) != "" || LeftPlugin(left, stop) != "llama" || LeftPlugin(left, remove) != "kube" {
		t.Errorf("routing after the targets left: pool %q, records %q and %q", gone.StepPlugin(stop), LeftPlugin(left, stop), LeftPlugin(left, remove))
	}
	if n := left[1].Node(); n.Address != "a.lan" || n.SSHUser != "ops" || n.SSHPort != 2222 {
		t.Errorf("node a as recorded: %+v", n)
	}
	if left[0].Namespace != "jobs-ns" || left[0].PodMemoryGB != 2 {
		t.Errorf("pod pool as recorded: %+v", left[0])
	}

	// An apply against the new pool keeps the records of what is left.
	st.RecordServed(gone)
	if len(st.Left(gone)) != 2 {
		t.Errorf("the records of the left targets were dropped while the fleet holds their lanes and members: %+v", st.Served)
	}
	// The records survive the state file.
	data, err := st.MarshalCompact()
	if err != nil {
		t.Fatal(err)
	}
	st.FormatVersion = StateFormatVersion
	read, err := ParseState("state.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Left(gone)) != 2 {
		b, _ := json.Marshal(read.Served)
		t.Errorf("after a round trip: %s", b)
	}
	// Once the lanes and members are gone, so are the records.
	read.Lanes, read.Members, read.Routes = nil, nil, nil
	read.RecordServed(gone)
	if len(read.Left(gone)) != 0 || len(read.Served) != 2 { // node b and the gateway
		t.Errorf("records after everything left was taken away: %+v", read.Served)
	}
}
