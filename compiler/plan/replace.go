package plan

import (
	"fmt"
	"slices"

	"poolc.dev/poolc/pools"
)

// A lane that keeps its name but runs something else on its node (new
// weights: another sha256, source or path of its model; other args; another
// port) needs a new process. The planner replaces it make-before-break on
// the node, as it moves a lane between nodes: the new weights are
// prefetched, a second process starts beside the old one on another port,
// the aliases flip to it, and the old process drains and stops. Its
// weights never overwrite the file the old process has mapped: when the
// old process loads the model's path with other content, the new weights
// are staged beside it (pools.StagedPath), and the next upgrade goes back
// to the model's path, which then no process holds. Where the node's
// budget cannot hold both processes, the memory edges make the old one
// stop first (see memory), the aliases use an interim, and with none the
// plan reports the interruption with the budget's numbers.

// resolve settles, in the desired fleet, which process each lane runs as:
//   - a lane whose current process on its node runs what it should keeps
//     it, with its port (the lane's or its spare) and weights file (the
//     model's path or the staged one);
//   - otherwise its new process listens on the lane's port, or on its
//     spare port when a current process on the node listens there (both
//     taken, or an on-demand lane already in the node's router: the
//     lane's port, and the old process is replaced in place);
//     its weights go to the model's path unless a current process on the
//     node loads that path with other content, then to the staged path.
//
// The desired weights files and routes follow; routes of the current fleet
// that name no port (states written before routes did) are read as the
// port of their lane's process on the node. spare is each lane's spare
// port on the node des places it on.
func resolve(pool *pools.Pool, spare map[string]int, cur, des *pools.Fleet) {
	onNode := byNode(cur)
	for i := range cur.Routes {
		r := &cur.Routes[i]
		if l := cur.Serves(*r); l != nil && r.Port == 0 {
			r.Port = l.Port
		}
	}
	for i := range des.Lanes {
		d := &des.Lanes[i]
		if c := kept(cur, *d, spare[d.Name]); c != nil {
			d.Port, d.Path = c.Port, c.Path
			continue
		}
		if listens(onNode[d.Node], d.Port) && spare[d.Name] != 0 && !listens(onNode[d.Node], spare[d.Name]) && !inRouter(onNode[d.Node], *d) {
			d.Port = spare[d.Name]
		}
		if holdsOther(onNode[d.Node], *d) {
			d.Path = pools.StagedPath(*d)
		}
	}
	des.Normalize()
	des.Prefetched = des.Prefetched[:0]
	seen := make(map[pools.Prefetch]bool, len(des.Lanes))
	for _, d := range des.Lanes {
		pf := pools.Prefetch{Node: d.Node, Model: d.Model, Path: d.Path, SHA256: d.SHA256}
		if m := pool.Model(d.Model); m != nil {
			pf.SizeGB = m.SizeGB
		}
		if !seen[pf] {
			seen[pf] = true
			des.Prefetched = append(des.Prefetched, pf)
		}
	}
	for i := range des.Routes {
		r := &des.Routes[i]
		if l := des.Serves(*r); l != nil {
			r.Port = l.Port
		}
	}
	des.Normalize()
}

// kept returns the current process on d's node that already runs what d
// declares, on the lane's port or its spare, from the model's path or the
// staged one; or nil.
func kept(cur *pools.Fleet, d pools.LaneState, spare int) *pools.LaneState {
	for _, c := range cur.Instances(d.Name) {
		if c.Node != d.Node || (c.Port != d.Port && c.Port != spare) {
			continue
		}
		if c.Path != d.Path && c.Path != pools.StagedPath(d) {
			continue
		}
		port := c.Port
		c.Path = d.Path // the path checked, compare the rest
		if sameRun(c, d) {
			return cur.Process(d.Name, d.Node, port)
		}
	}
	return nil
}

// sameRun reports whether process c runs what d describes: the same
// model, weights file, weights and args. Port and residency are compared
// by the caller.
func sameRun(c, d pools.LaneState) bool {
	return c.Model == d.Model && c.Path == d.Path && pools.SameWeights(c, d) && slices.Equal(c.Args, d.Args) && sameRouterAliases(c, d)
}

// sameRouterAliases reports whether two on-demand lanes answer to the
// same names in their node's router; lanes not both on-demand compare
// equal here (a process of its own answers to any name).
func sameRouterAliases(c, d pools.LaneState) bool {
	return c.Residency != pools.OnDemand || d.Residency != pools.OnDemand || slices.Equal(c.Aliases, d.Aliases)
}

// inRouter reports whether d is an on-demand lane that is already a model
// of its node's router: the router holds one section per lane, so its new
// weights or args replace the section in place (a reload cuts the
// model's streams), on the lane's port, after the old one has stopped;
// there is no second process beside it to start first.
func inRouter(onNode []pools.LaneState, d pools.LaneState) bool {
	return d.Residency == pools.OnDemand && slices.ContainsFunc(onNode, func(l pools.LaneState) bool {
		return l.Name == d.Name && l.Port == d.Port && l.Residency == pools.OnDemand
	})
}

// byNode lists the fleet's lane processes of each node.
func byNode(f *pools.Fleet) map[string][]pools.LaneState {
	out := map[string][]pools.LaneState{}
	for _, l := range f.Lanes {
		out[l.Node] = append(out[l.Node], l)
	}
	return out
}

// listens reports whether one of a node's processes listens on port.
func listens(onNode []pools.LaneState, port int) bool {
	return slices.ContainsFunc(onNode, func(l pools.LaneState) bool { return l.Port == port })
}

// holdsOther reports whether one of the processes of d's node loads d's
// weights file with other weights than d's.
func holdsOther(onNode []pools.LaneState, d pools.LaneState) bool {
	return slices.ContainsFunc(onNode, func(l pools.LaneState) bool {
		return l.Path == d.Path && !pools.SameWeights(l, d)
	})
}

// replaceText names what changes when process c is replaced by d on its
// node: what the pool changed, leaving out what only follows from the
// replacement (the spare port, the staged weights file).
func (r *reasons) replaceText(c, d pools.LaneState) string {
	ports := []int{r.ports[d.Name], r.spare[d.Name]}
	if slices.Contains(ports, c.Port) && slices.Contains(ports, d.Port) {
		d.Port = c.Port
	}
	if m := r.in.Pool.Model(d.Model); m != nil && modelFile(*m, c) && modelFile(*m, d) {
		d.Path = c.Path
	}
	return processChange(c, d)
}

// modelFile reports whether l loads model m's path, or the file its
// weights are staged at beside it.
func modelFile(m pools.Model, l pools.LaneState) bool {
	return l.Path == m.Path || l.Path == pools.StagedPath(pools.LaneState{Path: m.Path, SHA256: l.SHA256, Source: l.Source})
}

// budgetText says why a node cannot hold a lane's old and new process at
// once: "node a has a budget 115.2 GB (128 GB x 0.90) and holds 100 GB;
// the new process needs 30 GB more".
func (r *reasons) budgetText(node string, need float64) string {
	n := r.in.Pool.Node(node)
	if n == nil {
		return ""
	}
	if r.heldOn == nil {
		r.heldOn = map[string]float64{}
		for _, l := range r.cur.Lanes {
			r.heldOn[l.Node] += l.Reserved()
		}
	}
	held := r.heldOn[node]
	return fmt.Sprintf("%s has a %s and holds %s; the new process needs %s more", node, n.BudgetText(), pools.GB(held), pools.GB(need))
}
