package sim

import (
	"slices"

	"poolc.dev/poolc/pools"
)

// routing is the gateway's table: each alias's route and fallbacks, and
// the nodes the gateway believes do not answer; it picks the lane process
// a fallback lane's request goes to. It asks the fleet (lanes) which
// processes run where and tells it when an alias moves, and the faults
// (health) whether a node the gateway avoids has been probed back.
type routing struct {
	fleet    lanes
	nodes    health
	aliases  []alias
	aliasIdx map[string]int32
	bad      []bool // per node: the gateway's belief that it does not answer
}

func newRouting(fleet lanes, nodes health) *routing {
	return &routing{fleet: fleet, nodes: nodes, aliasIdx: map[string]int32{}}
}

// entry is alias i's entry; find is the index of the named alias, if
// the gateway has it.
func (t *routing) entry(i int32) *alias { return &t.aliases[i] }
func (t *routing) find(name string) (int32, bool) {
	i, ok := t.aliasIdx[name]
	return i, ok
}

// markBad marks node ni as not answering: the gateway avoids it until a
// probe finds it answering again.
func (t *routing) markBad(ni int32) { *t.badNode(ni) = true }

// isBad reports whether the gateway avoids node ni; a probe after the
// node answers again clears the mark.
func (t *routing) isBad(ni int32) bool {
	bad := t.badNode(ni)
	if *bad && t.nodes.probed(ni) {
		*bad = false
	}
	return *bad
}

// badNode is the gateway's mark on node ni.
func (t *routing) badNode(ni int32) *bool {
	for int(ni) >= len(t.bad) {
		t.bad = append(t.bad, false)
	}
	return &t.bad[ni]
}

// alias returns the index of the named alias, adding it unrouted.
func (t *routing) alias(name string) int32 {
	i, ok := t.aliasIdx[name]
	if !ok {
		i = int32(len(t.aliases))
		t.aliasIdx[name] = i
		t.aliases = append(t.aliases, alias{name: name, route: noRoute})
	}
	return i
}

// setAliases takes the aliases and their fallbacks from a configuration,
// keeping the routes of aliases it still declares.
func (t *routing) setAliases(p *pools.Pool) {
	for _, a := range p.Aliases {
		al := &t.aliases[t.alias(a.Name)]
		al.fallbacks = slices.Clone(a.Fallbacks)
		al.absent = false
		al.hasCloud = slices.Contains(a.Fallbacks, pools.Cloud)
	}
}

// setRoute points an alias at a lane process, the cloud, or nowhere
// (r.Lane ""). It reports false when the lane process is not registered.
func (t *routing) setRoute(r pools.Route) bool {
	i := t.alias(r.Alias)
	target := noRoute
	switch r.Lane {
	case "":
	case pools.Cloud:
		target = toCloud
	default:
		p, ok := t.fleet.lookup(r.Lane, r.Node)
		if !ok {
			return false
		}
		target = p
	}
	a := &t.aliases[i]
	from := a.route
	a.route = target
	if _, server := pools.LaneServerOf(r.Alias); !server {
		// A lane's server route (pools.LaneServer) only says where the
		// gateway reaches a lane that aliases fall back to: no alias
		// routes there.
		t.fleet.routedTo(from, target)
	}
	return true
}

// routes is the gateway's route table.
func (t *routing) routes() []pools.Route {
	var out []pools.Route
	for _, a := range t.aliases {
		switch {
		case a.route == toCloud:
			out = append(out, pools.Route{Alias: a.name, Lane: pools.Cloud})
		case a.route >= 0:
			s := t.fleet.spec(a.route)
			out = append(out, pools.Route{Alias: a.name, Lane: s.Name, Node: s.Node, Router: s.Residency == pools.OnDemand})
		}
	}
	return out
}

// laneTarget picks the process of a fallback lane to send a request to:
// one that can serve on a node the gateway trusts, a loaded one first.
func (t *routing) laneTarget(lane string) int32 {
	best := noRoute
	for _, i := range t.fleet.processes(lane) {
		if !t.fleet.servable(i) || t.isBad(t.fleet.nodeOf(i)) {
			continue
		}
		if t.fleet.loaded(i) {
			return i
		}
		if best == noRoute {
			best = i
		}
	}
	return best
}

// alias is the gateway's entry for a public name: where it routes and the
// fallbacks tried when that cannot serve.
type alias struct {
	name string
	// route is the lane process requests go to, or toCloud, or noRoute.
	route     int32
	fallbacks []string
	hasCloud  bool
	// absent marks an alias the scenario demands that no configuration
	// in force has declared: its requests fail.
	absent bool
}

// Route targets that are not lane processes.
const (
	noRoute int32 = -1
	toCloud int32 = -2
)
