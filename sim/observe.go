package sim

import (
	"slices"

	"poolc.dev/poolc/pools"
)

// observe is the fleet as the controller sees it, the current fleet it
// plans from: the nodes of the configuration (down when their lease
// lapsed), the lane processes on nodes that are not down — except those
// stopping and those the guard latched, which are not running — the
// gateway's routes, the weights on each node and the pod-pool members.
// Keep-warm and preferred lanes count as loaded, as a state store records
// them (admission may have evicted a preferred one for a while).
func (w *world) observe(pool *pools.Pool, down map[string]bool) pools.Fleet {
	var f pools.Fleet
	for _, n := range pool.Nodes {
		f.Nodes = append(f.Nodes, pools.NodeState{Name: n.Name, Down: down[n.Name]})
	}
	for i := range w.insts {
		in := &w.insts[i]
		if !in.registered || in.stopping || in.latched || down[w.nodes[in.node].name] {
			continue
		}
		l := in.spec
		l.Args = slices.Clone(l.Args)
		l.Loaded = l.Residency != pools.OnDemand
		f.Lanes = append(f.Lanes, l)
	}
	f.Routes = w.gw.routes()
	f.Prefetched = slices.Clone(w.prefetched)
	f.Members = slices.Clone(w.members)
	f.Normalize()
	return f
}

// final is the fleet as the hardware has it: every registered lane
// process with whether it is in memory, the routes, the weights, and the
// nodes that are down (crashed or hung).
func (w *world) final() pools.Fleet {
	var f pools.Fleet
	for i := range w.nodes {
		n := &w.nodes[i]
		f.Nodes = append(f.Nodes, pools.NodeState{Name: n.name, Down: !n.up || n.hung})
	}
	for i := range w.insts {
		in := &w.insts[i]
		if !in.registered {
			continue
		}
		l := in.spec
		l.Loaded = in.loaded
		f.Lanes = append(f.Lanes, l)
	}
	f.Routes = w.gw.routes()
	f.Prefetched = slices.Clone(w.prefetched)
	f.Members = slices.Clone(w.members)
	f.Normalize()
	return f
}
