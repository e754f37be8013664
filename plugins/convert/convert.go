// Package convert is the one place where poolc's own types (pools) meet
// the plugin SDK's (sdk): steps and inventories on the way to a plugin,
// observed fleets on the way back, and the reverse for the built-in
// actuators that keep their world in poolc's terms. A refactor of pools
// changes this package, never what a plugin receives.
package convert

import (
	"slices"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// Plan is what a step is read against: the pool it was planned from, the
// fleet before the plan, for a route's old endpoint, and the state's
// records of the targets that left the pool (pools.State.Left), for the
// node or pod pool of a step the pool no longer declares. Make one with
// NewPlan, which indexes the pool's aliases by lane.
type Plan struct {
	Pool   *pools.Pool
	Before *pools.Fleet
	Left   []pools.Served
	// aliases lists, per lane, the aliases the pool routes to it.
	aliases map[string][]string
}

// NewPlan is the Plan of a pool, the fleet before it and the records of
// the targets that left the pool.
func NewPlan(pool *pools.Pool, before *pools.Fleet, left []pools.Served) Plan {
	aliases := map[string][]string{}
	for _, a := range pool.Aliases {
		aliases[a.Lane] = append(aliases[a.Lane], a.Name)
	}
	return Plan{Pool: pool, Before: before, Left: left, aliases: aliases}
}

// left is the record of the target that left the pool, or nil.
func (p Plan) left(role, name string) *pools.Served {
	for i := range p.Left {
		if p.Left[i].Role == role && p.Left[i].Name == name {
			return &p.Left[i]
		}
	}
	return nil
}

// Node is the SDK's node for a pool node. Its address never holds a port
// (the schema's #Host refuses one); the SSH port is SSHPort.
func Node(n *pools.Node) sdk.Node {
	return sdk.Node{Name: n.Name, Address: n.Address, SSHUser: n.SSHUser, SSHPort: n.SSHPort, KubeContext: n.KubeContext,
		MemoryGB: n.MemoryGB, BudgetGB: n.Budget(), Labels: n.Labels}
}

// node is the SDK's node of that name: the pool's, or as the state
// recorded it when it left the pool, or one with only the name.
func (p Plan) node(name string) sdk.Node {
	if n := p.Pool.Node(name); n != nil {
		return Node(n)
	}
	if l := p.left("runtime", name); l != nil {
		n := l.Node()
		return Node(&n)
	}
	return sdk.Node{Name: name}
}

// Model is the SDK's model for a pool model.
func Model(m *pools.Model) sdk.Model {
	return sdk.Model{Name: m.Name, Path: m.Path, Source: m.Source, SHA256: m.SHA256, SizeGB: m.SizeGB, MemoryGB: m.MemoryGB, Args: m.Args}
}

// model is the SDK's model of that name as a lane or file uses it: its
// path, digest, source (and args) as the step gives them, the rest from
// the pool. A step of a process that runs older weights than the pool
// declares (the drain of a lane being upgraded) names the old ones.
func (p Plan) model(name string, file pools.LaneState) sdk.Model {
	out := sdk.Model{Name: name}
	if m := p.Pool.Model(name); m != nil {
		out = Model(m)
	}
	if file.Path != "" {
		out.Path = file.Path
	}
	if file.SHA256 != "" {
		out.SHA256 = file.SHA256
	}
	if file.Source != "" {
		out.Source = file.Source
	}
	if file.Args != nil {
		out.Args = file.Args
	}
	return out
}

// lane is the SDK's lane for a lane process.
func (p Plan) lane(l pools.LaneState) sdk.Lane {
	return sdk.Lane{Name: l.Name, Node: p.node(l.Node), Model: p.model(l.Model, l), Port: l.Port,
		Aliases: p.aliasesOf(l.Name), Residency: string(l.Residency), Loaded: l.Loaded}
}

// aliasesOf lists the aliases the pool routes to the lane, in the pool's
// order, in a slice of its own.
func (p Plan) aliasesOf(lane string) []string {
	return slices.Clone(p.aliases[lane])
}

// endpoint is where a route sends requests; the port is the route's,
// else that of the process in the fleet the route is read in, else the
// lane's in the pool.
func (p Plan) endpoint(r pools.Route, fleet *pools.Fleet) *sdk.LaneEndpoint {
	lane, node := r.Lane, r.Node
	if lane == "" {
		return nil
	}
	e := &sdk.LaneEndpoint{Lane: lane, Node: node}
	if lane == pools.Cloud {
		return e
	}
	e.Router = r.Router
	e.Address = p.node(node).Address
	e.Port = r.Port
	if fleet != nil && e.Port == 0 {
		if l := fleet.Serves(r); l != nil {
			e.Port = l.Port
		}
	}
	if e.Port == 0 {
		if l := p.Pool.Lane(lane); l != nil {
			e.Port = l.Port
		}
	}
	return e
}

// Member is the SDK's member for a member state of the pool.
func (p Plan) member(m pools.MemberState) sdk.Member {
	out := sdk.Member{PodPool: m.PodPool, Context: m.Context, Priority: m.Priority, SSHHost: m.SSHHost, SSHPort: m.SSHPort,
		Capacity: m.Capacity, Registry: m.Registry, Image: m.Image, PodMemoryGB: m.PodMemoryGB}
	if pp := p.Pool.PodPool(m.PodPool); pp != nil {
		out.Namespace, out.PodMemoryGB = pp.Namespace, pp.PodMemoryGB
	} else if l := p.left("cluster", m.PodPool); l != nil {
		out.Namespace, out.PodMemoryGB = l.Namespace, l.PodMemoryGB
	}
	return out
}

// Step is the SDK's step for a step of a plan.
func (p Plan) Step(s pools.Step) sdk.Step {
	out := sdk.Step{ID: s.ID, Kind: sdk.StepKind(s.Kind), Target: s.Target, Reason: s.Reason}
	switch s.Kind {
	case pools.StepStart, pools.StepResidency, pools.StepDrain, pools.StepStop:
		l := p.lane(*s.Lane)
		out.Lane, out.From = &l, string(s.From)
	case pools.StepRoute:
		rc := &sdk.RouteChange{Alias: s.Route.Alias, To: p.endpoint(*s.Route, nil)}
		if p.Before != nil {
			if r := p.Before.Route(s.Route.Alias); r != nil {
				rc.From = p.endpoint(*r, p.Before)
			}
		}
		out.Route = rc
	case pools.StepPrefetch:
		out.Prefetch = &sdk.Prefetch{Node: p.node(s.Prefetch.Node), Model: p.model(s.Prefetch.Model, pools.LaneState{Path: s.Prefetch.Path, SHA256: s.Prefetch.SHA256})}
	case pools.StepMemberEnsure, pools.StepMemberRemove:
		m := p.member(*s.Member)
		out.Member = &m
	case pools.StepImageSync:
		out.ImageSync = &sdk.ImageSync{Member: p.member(*s.Member), Image: s.Member.Image, Digest: pools.ImageDigest(s.Member.Image)}
	}
	return out
}

// Inventory is the part of the pool the plugin serves, by target. Lanes
// carry their residency under the pool's active profile. The gateway gets
// every node of the pool in GatewayNodes. Of the leaving members (those
// the state holds and the pool no longer lists, see plan.Leaving), it gets
// the ones of pod pools whose cluster it is. Of the targets that left the
// pool (left, the state's records), it gets the nodes it served, and the
// leaving members of the pod pools whose cluster it was.
func Inventory(pool *pools.Pool, plugin string, leaving []pools.MemberState, left ...pools.Served) sdk.Inventory {
	p := NewPlan(pool, nil, left)
	var inv sdk.Inventory
	models := map[string]bool{}
	inv.Gateway = pool.Gateway == plugin
	for i := range pool.Nodes {
		n := &pool.Nodes[i]
		if inv.Gateway {
			inv.GatewayNodes = append(inv.GatewayNodes, Node(n))
		}
		if n.Runtime != plugin {
			continue
		}
		inv.Nodes = append(inv.Nodes, Node(n))
	}
	for _, l := range pool.Under(pool.ActiveProfile).Lanes {
		if !inv.Gateway && !p.mayRunOn(l, inv) {
			continue
		}
		inv.Lanes = append(inv.Lanes, sdk.LaneSpec{Name: l.Name, Model: l.Model, Port: l.Port, Aliases: p.aliasesOf(l.Name), Residency: string(l.Residency)})
		if len(inv.Nodes) > 0 && !models[l.Model] {
			if m := pool.Model(l.Model); m != nil {
				models[l.Model] = true
				inv.Models = append(inv.Models, Model(m))
			}
		}
	}
	if inv.Gateway {
		for _, a := range pool.Aliases {
			inv.Aliases = append(inv.Aliases, sdk.AliasSpec{Name: a.Name, Lane: a.Lane, Fallbacks: a.Fallbacks})
		}
	}
	for _, pp := range pool.PodPools {
		if pp.Cluster != plugin && pp.ImageSync != plugin {
			continue
		}
		for i, m := range pp.Members {
			inv.Members = append(inv.Members, p.member(pools.MemberState{PodPool: pp.Name, Context: m.Context, Priority: i,
				SSHHost: m.SSHHost, SSHPort: m.SSHPort, Capacity: m.Capacity, Registry: m.Registry.String(), Image: pp.Image}))
		}
	}
	for _, l := range left {
		if l.Role == "runtime" && l.Plugin == plugin {
			inv.Nodes = append(inv.Nodes, p.node(l.Name))
		}
	}
	for _, m := range leaving {
		if p.clusterOf(m.PodPool) == plugin {
			inv.Leaving = append(inv.Leaving, p.member(m))
		}
	}
	return inv
}

// clusterOf names the cluster plugin of the pod pool: the pool's, or the
// one the state recorded when the pod pool left it.
func (p Plan) clusterOf(podPool string) string {
	if name := p.Pool.PluginOf("cluster", podPool); name != "" {
		return name
	}
	if l := p.left("cluster", podPool); l != nil {
		return l.Plugin
	}
	return ""
}

// mayRunOn reports whether a lane may be placed on one of the inventory's
// nodes: a candidate by name, or any node when the lane selects by label.
func (p Plan) mayRunOn(l pools.Lane, inv sdk.Inventory) bool {
	if len(inv.Nodes) == 0 {
		return false
	}
	if len(l.Placement) == 0 {
		return true
	}
	for _, c := range l.Placement {
		if inv.Node(c) != nil {
			return true
		}
	}
	return false
}

// Fleet is poolc's fleet for what a plugin observed.
func Fleet(f sdk.Fleet) pools.Fleet {
	var out pools.Fleet
	for _, n := range f.Nodes {
		out.Nodes = append(out.Nodes, pools.NodeState{Name: n.Name})
	}
	for _, l := range f.Lanes {
		out.Lanes = append(out.Lanes, LaneState(l))
	}
	for _, r := range f.Routes {
		out.Routes = append(out.Routes, pools.Route{Alias: r.Alias, Lane: r.Lane.Lane, Node: r.Lane.Node, Port: r.Lane.Port, Router: r.Lane.Router})
	}
	for _, pf := range f.Prefetched {
		out.Prefetched = append(out.Prefetched, pools.Prefetch{Node: pf.Node, Model: pf.Model.Name, Path: pf.Model.Path, SHA256: pf.Model.SHA256, SizeGB: pf.Model.SizeGB})
	}
	for _, m := range f.Members {
		out.Members = append(out.Members, MemberState(m))
	}
	for _, i := range f.Images {
		out.Images = append(out.Images, pools.MemberImage(i))
	}
	for _, u := range f.Unobserved {
		out.Unobserved = append(out.Unobserved, pools.Unobserved{Kind: pools.TargetKind(u.Kind), Name: u.Name, PodPool: u.PodPool, Context: u.Context,
			Cause: string(u.Cause), Detail: u.Detail})
	}
	out.Normalize()
	return out
}

// LaneState is poolc's lane process for the SDK's lane.
func LaneState(l sdk.Lane) pools.LaneState {
	out := pools.LaneState{Name: l.Name, Node: l.Node.Name, Model: l.Model.Name, Port: l.Port, Residency: pools.Residency(l.Residency),
		Path: l.Model.Path, SHA256: l.Model.SHA256, Source: l.Model.Source, Args: l.Model.Args, MemoryGB: l.Model.MemoryGB, Loaded: l.Loaded}
	if out.Residency == pools.OnDemand {
		out.Aliases = pools.SortedAliases(l.Aliases)
	}
	if p := l.Process; p != nil {
		o := pools.ObservedProcess(*p)
		out.Observed = &o
	}
	return out
}

// MemberState is poolc's member for the SDK's member.
func MemberState(m sdk.Member) pools.MemberState {
	return pools.MemberState{PodPool: m.PodPool, Context: m.Context, Priority: m.Priority, SSHHost: m.SSHHost, SSHPort: m.SSHPort,
		Capacity: m.Capacity, Registry: m.Registry, Image: m.Image, PodMemoryGB: m.PodMemoryGB}
}

// PoolsStep is poolc's step for the SDK's step, for actuators that keep
// their world in poolc's terms (the sim).
func PoolsStep(s sdk.Step) pools.Step {
	out := pools.Step{ID: s.ID, Kind: pools.StepKind(s.Kind), Target: s.Target, Reason: s.Reason, From: pools.Residency(s.From)}
	switch {
	case s.Lane != nil:
		l := LaneState(*s.Lane)
		out.Lane, out.Node = &l, l.Node
	case s.Route != nil:
		r := pools.Route{Alias: s.Route.Alias}
		if s.Route.To != nil {
			r.Lane, r.Node, r.Port, r.Router = s.Route.To.Lane, s.Route.To.Node, s.Route.To.Port, s.Route.To.Router
		}
		out.Route, out.Node = &r, r.Node
	case s.Prefetch != nil:
		out.Prefetch = &pools.Prefetch{Node: s.Prefetch.Node.Name, Model: s.Prefetch.Model.Name, Path: s.Prefetch.Model.Path, SHA256: s.Prefetch.Model.SHA256, SizeGB: s.Prefetch.Model.SizeGB}
		out.Node = out.Prefetch.Node
	case s.Member != nil:
		m := MemberState(*s.Member)
		out.Member = &m
	case s.ImageSync != nil:
		m := MemberState(s.ImageSync.Member)
		m.Image = s.ImageSync.Image
		out.Member = &m
	}
	return out
}

// NodesByName indexes an inventory's nodes by name, for SDKFleet.
func NodesByName(inv *sdk.Inventory) map[string]*sdk.Node {
	out := make(map[string]*sdk.Node, len(inv.Nodes))
	for i := range inv.Nodes {
		if n := &inv.Nodes[i]; out[n.Name] == nil {
			out[n.Name] = n
		}
	}
	return out
}

// SDKFleet is the SDK's fleet for poolc's, for actuators that keep their
// world in poolc's terms; nodes are filled from an inventory's, indexed
// by NodesByName, where it has them.
func SDKFleet(f pools.Fleet, nodes map[string]*sdk.Node) sdk.Fleet {
	node := func(name string) sdk.Node {
		if n := nodes[name]; n != nil {
			return *n
		}
		return sdk.Node{Name: name}
	}
	var out sdk.Fleet
	for _, n := range f.Nodes {
		out.Nodes = append(out.Nodes, sdk.NodeStatus{Name: n.Name})
	}
	for _, l := range f.Lanes {
		out.Lanes = append(out.Lanes, sdk.Lane{Name: l.Name, Node: node(l.Node), Port: l.Port, Residency: string(l.Residency), Loaded: l.Loaded, Aliases: l.Aliases,
			Model: sdk.Model{Name: l.Model, Path: l.Path, SHA256: l.SHA256, Source: l.Source, Args: l.Args, MemoryGB: l.MemoryGB}})
	}
	for _, r := range f.Routes {
		e := sdk.LaneEndpoint{Lane: r.Lane, Node: r.Node, Port: r.Port, Router: r.Router}
		if r.Node != "" {
			e.Address = node(r.Node).Address
		}
		out.Routes = append(out.Routes, sdk.Route{Alias: r.Alias, Lane: e})
	}
	for _, p := range f.Prefetched {
		out.Prefetched = append(out.Prefetched, sdk.Prefetched{Node: p.Node, Model: sdk.Model{Name: p.Model, Path: p.Path, SHA256: p.SHA256, SizeGB: p.SizeGB}})
	}
	for _, m := range f.Members {
		out.Members = append(out.Members, sdk.Member{PodPool: m.PodPool, Context: m.Context, Priority: m.Priority, SSHHost: m.SSHHost, SSHPort: m.SSHPort,
			Capacity: m.Capacity, Registry: m.Registry, Image: m.Image, PodMemoryGB: m.PodMemoryGB})
	}
	return out
}
