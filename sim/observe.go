package sim

import (
	"slices"

	"poolc.dev/poolc/pools"
)

// observe is the fleet as the controller sees it, with the gateway's
// routes: the current fleet it plans from: the nodes of the configuration (down when their lease
// lapsed), the lane processes on nodes that are not down — except those
// stopping and those the guard latched, which are not running — the
// gateway's routes, the weights on each node and the pod-pool members.
// Keep-warm and preferred lanes count as loaded, as a state store records
// them (admission may have evicted a preferred one for a while).
func (f *fleet) observe(pool *pools.Pool, down map[string]bool, routes []pools.Route) pools.Fleet {
	var out pools.Fleet
	for _, n := range pool.Nodes {
		out.Nodes = append(out.Nodes, pools.NodeState{Name: n.Name, Down: down[n.Name]})
	}
	for i := range f.insts {
		in := &f.insts[i]
		if !in.registered || in.stopping || f.guard.latched(int32(i)) || down[f.nodes[in.node].name] {
			continue
		}
		l := in.spec
		l.Args = slices.Clone(l.Args)
		l.Loaded = l.Residency != pools.OnDemand
		out.Lanes = append(out.Lanes, l)
	}
	return f.complete(out, routes)
}

// final is the fleet as the hardware has it, with the gateway's routes:
// every registered lane process with whether it is in memory, the
// routes, the weights, and the nodes that are down (crashed or hung).
func (f *fleet) final(routes []pools.Route) pools.Fleet {
	var out pools.Fleet
	for i := range f.nodes {
		out.Nodes = append(out.Nodes, pools.NodeState{Name: f.nodes[i].name, Down: f.health.down(int32(i))})
	}
	for i := range f.insts {
		in := &f.insts[i]
		if !in.registered {
			continue
		}
		l := in.spec
		l.Loaded = f.adm.loaded(int32(i))
		out.Lanes = append(out.Lanes, l)
	}
	return f.complete(out, routes)
}

// complete adds the routes, the weights on each node and the pod-pool
// members to a fleet, and normalizes it.
func (f *fleet) complete(out pools.Fleet, routes []pools.Route) pools.Fleet {
	out.Routes = routes
	out.Prefetched = slices.Clone(f.prefetched)
	out.Members = slices.Clone(f.members)
	out.Normalize()
	return out
}
