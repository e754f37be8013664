package pools

import (
	"fmt"
	"testing"
)

// TestSparePortsBelongToANode: lanes of two nodes with the same port get
// the same spare port, which a lane of the other node declares; on one
// node, a lane's spare skips its neighbours' ports and spares.
func TestSparePortsBelongToANode(t *testing.T) {
	p := &Pool{Lanes: []Lane{{Name: "x", Port: 8080}, {Name: "y", Port: 8080}, {Name: "z", Port: 8081}, {Name: "w", Port: 8082}}}
	placed := &Fleet{Lanes: []LaneState{{Name: "x", Node: "a"}, {Name: "y", Node: "b"}, {Name: "z", Node: "b"}, {Name: "w", Node: "a"}}}
	got := p.SparePorts(placed)
	want := map[string]int{"x": 8081, "w": 8083, "y": 8082, "z": 8083}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("spare ports %v, want %v", got, want)
	}
	placed.Lanes = placed.Lanes[:2] // x on a, y on b, z and w unplaced
	if got := p.SparePorts(placed); fmt.Sprint(got) != fmt.Sprint(map[string]int{"x": 8081, "y": 8081}) {
		t.Errorf("two lanes on two nodes with the same port: %v, want both on 8081", got)
	}
}

// TestSparePortsDoNotRunOutInALargePool: 60,000 lanes of distinct ports
// on 600 nodes each get a spare port, one no lane of their node declares
// and no other lane of their node took; searched pool-wide, the spare
// ports ran out past about 57,000 lanes.
func TestSparePortsDoNotRunOutInALargePool(t *testing.T) {
	const lanes, perNode = 60000, 100
	p := &Pool{Nodes: []Node{{Name: "n0", Runtime: LlamaRuntime}}}
	placed := &Fleet{}
	for i := range lanes {
		name := fmt.Sprintf("l%05d", i)
		p.Lanes = append(p.Lanes, Lane{Name: name, Port: 1024 + i})
		placed.Lanes = append(placed.Lanes, LaneState{Name: name, Node: fmt.Sprintf("n%d", i/perNode)})
	}
	spare := p.SparePorts(placed)
	taken := map[string]bool{} // node:port
	for i, l := range p.Lanes {
		taken[fmt.Sprintf("%s:%d", placed.Lanes[i].Node, l.Port)] = true
	}
	for i, l := range p.Lanes {
		s, node := spare[l.Name], placed.Lanes[i].Node
		key := fmt.Sprintf("%s:%d", node, s)
		switch {
		case s == 0:
			t.Fatalf("lane %s (port %d, node %s) has no spare port", l.Name, l.Port, node)
		case s <= l.Port || s == DefaultRouterPort || taken[key]:
			t.Fatalf("lane %s (port %d, node %s) has spare port %d, taken or not above its port", l.Name, l.Port, node, s)
		}
		taken[key] = true
	}
}
