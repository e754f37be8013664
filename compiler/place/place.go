// Package place assigns lanes to nodes and so computes the desired fleet.
//
// Each lane goes to the first candidate node (placement order, or the
// nodes its selector matches in name order) that is up, not cordoned by
// the active profile, and has room; keep-warm lanes are placed first, then
// preferred, then on-demand, each group in name order, so the result is a
// pure function of its input. Room follows admission: keep-warm and
// preferred lanes hold their memory, so each must fit beside the lanes of
// both kinds already placed; an on-demand lane loads by evicting preferred
// and on-demand lanes, so it must fit beside the keep-warm lanes only.
package place

import (
	"fmt"
	"sort"
	"strings"

	"poolc.dev/poolc/pools"
)

// Input is what placement depends on.
type Input struct {
	Pool *pools.Pool
	// Profile is the profile in force; "" means the pool's active profile.
	Profile string
	// Down lists nodes known to be down (from the current state, or assumed
	// for a what-if).
	Down map[string]bool
	// Cordon lists nodes their operator cordoned or drained (poolc node
	// cordon|drain); Running says whether a lane runs on a node now, which
	// a cordoned node keeps.
	Cordon  map[string]pools.Cordon
	Running func(lane, node string) bool
}

// Result is the desired fleet and how it came to be.
type Result struct {
	// Desired is the fleet placement wants. Its Prefetched list holds the
	// weights its lanes need; the planner adds those already on the nodes.
	Desired pools.Fleet
	// Why says, for each placed lane, why it is on its node and not on an
	// earlier candidate (empty when its first candidate took it).
	Why map[string][]pools.Exclusion
	// Unplaced lists lanes no node could take, with every exclusion.
	Unplaced []pools.Unplaced
	// Unserved lists aliases with no placed lane and no cloud fallback.
	Unserved []pools.Unserved
}

// Place computes the desired fleet.
func Place(in Input) Result {
	p := in.Pool
	d := decide(in)
	res := Result{Why: d.why, Unplaced: d.unplaced}
	res.Desired.Nodes = make([]pools.NodeState, 0, len(p.Nodes))
	for _, n := range p.Nodes {
		res.Desired.Nodes = append(res.Desired.Nodes, pools.NodeState{Name: n.Name, Down: in.Down[n.Name], Cordon: in.Cordon[n.Name]})
	}
	aliases := aliasesByLane(p)
	res.Desired.Lanes = make([]pools.LaneState, 0, len(d.lanes))
	prefetched := map[pools.Prefetch]bool{}
	for _, c := range d.lanes {
		l, m := c.lane, c.model
		res.Desired.Lanes = append(res.Desired.Lanes, pools.LaneState{
			Name: l.Name, Node: c.node, Model: l.Model, Port: l.Port, Residency: l.Residency,
			Path: m.Path, SHA256: m.SHA256, Source: m.Source, Args: m.Args, MemoryGB: m.MemoryGB, Loaded: l.Residency != pools.OnDemand,
			Aliases: routerAliases(aliases, *l),
		})
		if pf := (pools.Prefetch{Node: c.node, Model: m.Name, Path: m.Path, SHA256: m.SHA256, SizeGB: m.SizeGB}); !prefetched[pf] {
			prefetched[pf] = true
			res.Desired.Prefetched = append(res.Desired.Prefetched, pf)
		}
	}

	res.Desired.Routes = make([]pools.Route, 0, len(p.Aliases))
	for _, a := range p.Aliases {
		route, ok := routeFor(a, d.placed)
		if !ok {
			res.Unserved = append(res.Unserved, pools.Unserved{Alias: a.Name, Why: fmt.Sprintf("lane %s and its fallbacks are not placed", a.Lane)})
			continue
		}
		res.Desired.Routes = append(res.Desired.Routes, route)
	}
	res.Desired.Routes = append(res.Desired.Routes, laneServers(p, res.Desired.Routes, d.placed)...)
	res.Desired.Members = Members(p)
	res.Desired.Normalize()
	// An on-demand lane is reached through its node's router.
	for i := range res.Desired.Routes {
		r := &res.Desired.Routes[i]
		if l := res.Desired.Lane(r.Lane, r.Node); l != nil {
			r.Router = l.Residency == pools.OnDemand
		}
	}
	return res
}

// Unplaced is Place's Result.Unplaced alone: the lanes no node could take,
// without the desired fleet, for a check that needs no more.
func Unplaced(in Input) []pools.Unplaced { return decide(in).unplaced }

// decision is where placement put each lane, before the fleet is built
// from it.
type decision struct {
	lanes    []chosen          // placed lanes, in placement order
	placed   map[string]string // node by lane
	why      map[string][]pools.Exclusion
	unplaced []pools.Unplaced
}

// chosen is a placed lane, its model and its node.
type chosen struct {
	lane  *pools.Lane
	model *pools.Model
	node  string
}

// decide places each lane on its first candidate that may take it (see
// the package's comment). The memory held on a node is kept by the node's
// position in the pool.
func decide(in Input) decision {
	p := in.Pool
	profile := in.Profile
	if profile == "" {
		profile = p.ActiveProfile
	}
	view := p.Under(profile)
	nodes := p.NodeIndex()
	at := make(map[string]int, len(p.Nodes)) // node position by name
	for i, n := range p.Nodes {
		at[n.Name] = i
	}
	held := make([]float64, len(p.Nodes))      // keep-warm and preferred memory per node
	kwHeld := make([]float64, len(p.Nodes))    // keep-warm memory per node
	keepWarm := make([][]string, len(p.Nodes)) // keep-warm lanes per node, for messages
	lanes := append([]pools.Lane(nil), view.Lanes...)
	sort.SliceStable(lanes, func(i, j int) bool { return rank(lanes[i].Residency) < rank(lanes[j].Residency) })
	d := decision{lanes: make([]chosen, 0, len(lanes)), placed: make(map[string]string, len(lanes)), why: map[string][]pools.Exclusion{}}
	for li := range lanes {
		l := &lanes[li]
		m := p.Model(l.Model)
		if m == nil {
			continue
		}
		var excluded []pools.Exclusion
		choice := ""
		for _, name := range p.CandidatesIn(nodes, *l) {
			i, n := at[name], nodes[name]
			why := ""
			switch {
			case view.Cordoned[name]:
				why = fmt.Sprintf("is cordoned by profile %s", profile)
			case in.Down[name]:
				why = "is down"
			case in.Cordon[name] == pools.Drained:
				why = "is drained (poolc node drain)"
			case in.Cordon[name] == pools.Cordoned && (in.Running == nil || !in.Running(l.Name, name)):
				why = "is cordoned (poolc node cordon) and does not run it yet"
			case l.Residency == pools.OnDemand && kwHeld[i]+m.MemoryGB > n.Budget()+epsilon:
				why = fmt.Sprintf("has %s free of its %s beside keep-warm lanes %s; needs %s",
					pools.GB(n.Budget()-kwHeld[i]), n.BudgetText(), andList(keepWarm[i]), pools.GB(m.MemoryGB))
				if len(keepWarm[i]) == 0 {
					why = fmt.Sprintf("has a %s; needs %s", n.BudgetText(), pools.GB(m.MemoryGB))
				}
			case l.Residency != pools.OnDemand && held[i]+m.MemoryGB > n.Budget()+epsilon:
				why = fmt.Sprintf("has %s free of its %s; needs %s", pools.GB(n.Budget()-held[i]), n.BudgetText(), pools.GB(m.MemoryGB))
			}
			if why != "" {
				excluded = append(excluded, pools.Exclusion{Node: name, Why: why})
				continue
			}
			choice = name
			break
		}
		if choice == "" {
			d.unplaced = append(d.unplaced, pools.Unplaced{Lane: l.Name, Residency: l.Residency, MemoryGB: m.MemoryGB, Excluded: excluded})
			continue
		}
		d.placed[l.Name] = choice
		d.lanes = append(d.lanes, chosen{lane: l, model: m, node: choice})
		if len(excluded) > 0 {
			d.why[l.Name] = excluded
		}
		i := at[choice]
		if l.Residency != pools.OnDemand {
			held[i] += m.MemoryGB
		}
		if l.Residency == pools.KeepWarm {
			kwHeld[i] += m.MemoryGB
			keepWarm[i] = append(keepWarm[i], l.Name)
		}
	}
	sort.Slice(d.unplaced, func(i, j int) bool { return d.unplaced[i].Lane < d.unplaced[j].Lane })
	return d
}

// Members is the desired state of the pool's pod-pool members, in the
// pool's order: they do not depend on placement.
func Members(p *pools.Pool) []pools.MemberState {
	var out []pools.MemberState
	for _, pp := range p.PodPools {
		for i, m := range pp.Members {
			out = append(out, pools.MemberState{
				PodPool: pp.Name, Context: m.Context, Priority: i, SSHHost: m.SSHHost, SSHPort: m.SSHPort,
				Capacity: m.Capacity, Registry: m.Registry.String(), Image: SyncedImage(pp, m), PodMemoryGB: pp.PodMemoryGB,
			})
		}
	}
	return out
}

// aliasesByLane lists the names of the pool's aliases by the lane they
// route to, in the pool's order.
func aliasesByLane(p *pools.Pool) map[string][]string {
	out := map[string][]string{}
	for _, a := range p.Aliases {
		out[a.Lane] = append(out[a.Lane], a.Name)
	}
	return out
}

// routerAliases are the names an on-demand lane's section of its node's
// router answers to: the aliases the pool routes to it (see
// pools.LaneState.Aliases), aliases being aliasesByLane's index.
func routerAliases(aliases map[string][]string, l pools.Lane) []string {
	if l.Residency != pools.OnDemand {
		return nil
	}
	return pools.SortedAliases(aliases[l.Name])
}

// laneServers routes, under pools.LaneServer, each placed lane that an
// alias falls back to and no route of routes reaches, so that the
// gateway's server for it is where the lane runs.
func laneServers(p *pools.Pool, routes []pools.Route, placed map[string]string) []pools.Route {
	reached := make(map[string]bool, len(routes))
	for _, r := range routes {
		reached[r.Lane] = true
	}
	var out []pools.Route
	for _, a := range p.Aliases {
		for _, f := range a.Fallbacks {
			node, ok := placed[f]
			if !ok || reached[f] {
				continue
			}
			reached[f] = true
			out = append(out, pools.Route{Alias: pools.LaneServer(f), Lane: f, Node: node})
		}
	}
	return out
}

// routeFor routes an alias to its lane, else to the first placed fallback.
func routeFor(a pools.Alias, placed map[string]string) (pools.Route, bool) {
	for _, lane := range append([]string{a.Lane}, a.Fallbacks...) {
		if lane == pools.Cloud {
			return pools.Route{Alias: a.Name, Lane: pools.Cloud}, true
		}
		if node, ok := placed[lane]; ok {
			return pools.Route{Alias: a.Name, Lane: lane, Node: node}, true
		}
	}
	return pools.Route{}, false
}

// andList shows names as "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func rank(r pools.Residency) int {
	switch r {
	case pools.KeepWarm:
		return 0
	case pools.Preferred:
		return 1
	}
	return 2
}

// epsilon absorbs float rounding in GB sums.
const epsilon = 1e-9

// SyncedImage is the image member m's registry should hold: the pod
// pool's image when the pool names an image-sync plugin and m has a
// registry, "" otherwise (nothing copies an image there, so the state
// records none and no image-sync step is planned).
func SyncedImage(pp pools.PodPool, m pools.Member) string {
	if pp.ImageSync == "" || m.Registry.IsZero() {
		return ""
	}
	return pp.Image
}
