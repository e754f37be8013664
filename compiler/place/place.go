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
	profile := in.Profile
	if profile == "" {
		profile = p.ActiveProfile
	}
	view := p.Under(profile)
	nodes := p.NodeIndex()
	res := Result{Why: map[string][]pools.Exclusion{}}
	for _, n := range p.Nodes {
		res.Desired.Nodes = append(res.Desired.Nodes, pools.NodeState{Name: n.Name, Down: in.Down[n.Name], Cordon: in.Cordon[n.Name]})
	}

	held := map[string]float64{}      // keep-warm and preferred memory per node
	keepWarm := map[string][]string{} // keep-warm lanes per node, for messages
	kwHeld := map[string]float64{}
	lanes := append([]pools.Lane(nil), view.Lanes...)
	sort.SliceStable(lanes, func(i, j int) bool { return rank(lanes[i].Residency) < rank(lanes[j].Residency) })
	placed := make(map[string]string, len(lanes))
	aliases := aliasesByLane(p)
	prefetched := make(map[pools.Prefetch]bool, len(lanes))
	for _, l := range lanes {
		m := p.Model(l.Model)
		if m == nil {
			continue
		}
		var excluded []pools.Exclusion
		chosen := ""
		for _, name := range p.CandidatesIn(nodes, l) {
			n := nodes[name]
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
			case l.Residency == pools.OnDemand && kwHeld[name]+m.MemoryGB > n.Budget()+epsilon:
				why = fmt.Sprintf("has %s free of its %s beside keep-warm lanes %s; needs %s",
					pools.GB(n.Budget()-kwHeld[name]), n.BudgetText(), andList(keepWarm[name]), pools.GB(m.MemoryGB))
				if len(keepWarm[name]) == 0 {
					why = fmt.Sprintf("has a %s; needs %s", n.BudgetText(), pools.GB(m.MemoryGB))
				}
			case l.Residency != pools.OnDemand && held[name]+m.MemoryGB > n.Budget()+epsilon:
				why = fmt.Sprintf("has %s free of its %s; needs %s", pools.GB(n.Budget()-held[name]), n.BudgetText(), pools.GB(m.MemoryGB))
			}
			if why != "" {
				excluded = append(excluded, pools.Exclusion{Node: name, Why: why})
				continue
			}
			chosen = name
			break
		}
		if chosen == "" {
			res.Unplaced = append(res.Unplaced, pools.Unplaced{Lane: l.Name, Residency: l.Residency, MemoryGB: m.MemoryGB, Excluded: excluded})
			continue
		}
		placed[l.Name] = chosen
		if len(excluded) > 0 {
			res.Why[l.Name] = excluded
		}
		if l.Residency != pools.OnDemand {
			held[chosen] += m.MemoryGB
		}
		if l.Residency == pools.KeepWarm {
			kwHeld[chosen] += m.MemoryGB
			keepWarm[chosen] = append(keepWarm[chosen], l.Name)
		}
		res.Desired.Lanes = append(res.Desired.Lanes, pools.LaneState{
			Name: l.Name, Node: chosen, Model: l.Model, Port: l.Port, Residency: l.Residency,
			Path: m.Path, SHA256: m.SHA256, Source: m.Source, Args: m.Args, MemoryGB: m.MemoryGB, Loaded: l.Residency != pools.OnDemand,
			Aliases: routerAliases(aliases, l),
		})
		if pf := (pools.Prefetch{Node: chosen, Model: m.Name, Path: m.Path, SHA256: m.SHA256, SizeGB: m.SizeGB}); !prefetched[pf] {
			prefetched[pf] = true
			res.Desired.Prefetched = append(res.Desired.Prefetched, pf)
		}
	}
	sort.Slice(res.Unplaced, func(i, j int) bool { return res.Unplaced[i].Lane < res.Unplaced[j].Lane })

	for _, a := range p.Aliases {
		route, ok := routeFor(a, placed)
		if !ok {
			res.Unserved = append(res.Unserved, pools.Unserved{Alias: a.Name, Why: fmt.Sprintf("lane %s and its fallbacks are not placed", a.Lane)})
			continue
		}
		res.Desired.Routes = append(res.Desired.Routes, route)
	}
	res.Desired.Routes = append(res.Desired.Routes, laneServers(p, res.Desired.Routes, placed)...)
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
