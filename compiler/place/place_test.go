package place

import (
	"testing"

	"poolc.dev/poolc/pools"
)

func cordonPool() *pools.Pool {
	p := &pools.Pool{
		Name:   "lab",
		Guard:  pools.Guard{Ceiling: 0.9, ReserveGB: 8},
		Models: []pools.Model{{Name: "m", Path: "/m.gguf", SizeGB: 1, MemoryGB: 10}},
		Lanes: []pools.Lane{
			{Name: "x", Model: "m", Residency: pools.KeepWarm, Placement: []string{"a", "b"}, Port: 1},
			{Name: "y", Model: "m", Residency: pools.KeepWarm, Placement: []string{"b", "a"}, Port: 2},
		},
	}
	for _, n := range []string{"a", "b"} {
		p.Nodes = append(p.Nodes, pools.Node{Name: n, Address: n, MemoryGB: 64, Guard: p.Guard})
	}
	return p
}

func nodeOf(res Result, lane string) string {
	for _, l := range res.Desired.Lanes {
		if l.Name == lane {
			return l.Node
		}
	}
	return ""
}

// A cordoned node keeps the lanes running on it and takes no new one; a
// drained node takes none, so its lanes move off.
func TestCordonKeepsRunningLanesAndDrainMovesThem(t *testing.T) {
	p := cordonPool()
	runningOnA := func(lane, node string) bool { return node == "a" && lane == "x" }
	res := Place(Input{Pool: p, Cordon: map[string]pools.Cordon{"a": pools.Cordoned}, Running: runningOnA})
	if nodeOf(res, "x") != "a" {
		t.Errorf("a cordoned node lost its running lane: x on %q", nodeOf(res, "x"))
	}
	res = Place(Input{Pool: p, Cordon: map[string]pools.Cordon{"b": pools.Cordoned}, Running: runningOnA})
	if nodeOf(res, "y") != "a" {
		t.Errorf("a cordoned node took a new lane: y on %q", nodeOf(res, "y"))
	}
	res = Place(Input{Pool: p, Cordon: map[string]pools.Cordon{"a": pools.Drained}, Running: runningOnA})
	if nodeOf(res, "x") != "b" || nodeOf(res, "y") != "b" {
		t.Errorf("a drained node kept lanes: x on %q, y on %q", nodeOf(res, "x"), nodeOf(res, "y"))
	}
	if res.Desired.Nodes[0].Cordon != pools.Drained {
		t.Errorf("desired nodes lost the cordon: %+v", res.Desired.Nodes)
	}
}
