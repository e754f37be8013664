package plan

import (
	"sort"

	"poolc.dev/poolc/pools"
)

// gateway lays out the route steps: an alias's route that changes, or
// whose lane's process goes, and the order of a lane's server route
// against the aliases' routes to the lane.
type gateway struct {
	*draft
	why       *reasons
	meanwhile *interims
}

func routeID(alias string) string { return "route:" + alias }

// routes lays out a route step for every alias whose route changes, an
// interim route and back for aliases whose lane must break first, and
// records the interruptions where no interim exists.
func (g *gateway) routes() {
	aliases := map[string]bool{}
	for _, f := range []pools.Fleet{g.cur, g.des} {
		for _, r := range f.Routes {
			aliases[r.Alias] = true
		}
	}
	names := make([]string, 0, len(aliases))
	for a := range aliases {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, alias := range names {
		g.route(alias, g.cur.Route(alias), g.des.Route(alias))
	}
	// A lane's server route that goes retires the lane's servers unless
	// an alias routes to it: an alias's route to the lane waits for it,
	// so that the server it readies is not retired under it.
	type aliasStep struct {
		alias string
		step  *pools.Step
	}
	toLane := map[string][]aliasStep{} // route steps by the lane they route to, in alias order
	for _, alias := range names {
		if s := g.byID[routeID(alias)]; s != nil {
			toLane[s.Route.Lane] = append(toLane[s.Route.Lane], aliasStep{alias, s})
		}
	}
	for _, alias := range names {
		lane, server := pools.LaneServerOf(alias)
		gone := g.byID[routeID(alias)]
		if !server || gone == nil || gone.Route.Lane != "" {
			continue
		}
		for _, o := range toLane[lane] {
			if o.alias != alias {
				dependOn(o.step, gone.ID)
			}
		}
	}
}

// route lays out the steps of one alias moving from route cr to dr (either
// may be nil).
func (g *gateway) route(alias string, cr, dr *pools.Route) {
	var was, will *pools.LaneState // the processes the routes reach
	if cr != nil {
		was = g.cur.Serves(*cr)
	}
	if dr != nil {
		will = g.des.Serves(*dr)
	}
	leaving := was != nil && g.gone[processOf(*was)]
	changed := cr == nil || dr == nil || *cr != *dr
	if !changed && !leaving {
		return
	}
	var start *pools.Step // the start the new route waits for, if any
	if dr != nil && dr.Lane != pools.Cloud {
		start = g.byID[g.laneID(pools.StepStart, pools.LaneState{Name: dr.Lane, Node: dr.Node, Port: dr.Port})]
	}
	// A lane's server route (pools.LaneServer) is no alias's: it has no
	// interim and its break is no interruption.
	_, server := pools.LaneServerOf(alias)
	var interim *pools.Step
	withdrawn := false
	if leaving && g.breakFirst[cr.Lane] {
		if start != nil && !server {
			interim = g.meanwhile.interim(alias, *cr)
		}
		if interim == nil && (start != nil || !changed) {
			interim, withdrawn = g.meanwhile.withdraw(alias, *cr), true
		}
	}
	var s *pools.Step
	if changed || interim != nil {
		target := pools.Route{Alias: alias}
		if dr != nil {
			target = *dr
		}
		reason := g.why.routeReason(cr, dr)
		if crosses(cr, dr) && will != nil {
			reason = crossRouteReason(*will)
		}
		s = g.add(pools.Step{
			ID: routeID(alias), Kind: pools.StepRoute, Target: alias, Node: target.Node,
			Route: &target, Reason: reason, Estimate: pools.Estimate{Seconds: RouteSeconds},
		})
		if start != nil {
			dependOn(s, start.ID)
		}
		if interim != nil {
			dependOn(s, interim.ID)
		}
	}
	if s != nil && cr != nil && cr.Node == "" && cr.Lane != pools.Cloud && !g.breakFirst[cr.Lane] {
		g.drainAfterUnplacedRoute(*cr, s)
	}
	if !leaving {
		return
	}
	drain := g.byID[g.laneID(pools.StepDrain, pools.LaneState{Name: cr.Lane, Node: cr.Node, Port: cr.Port})]
	switch {
	case withdrawn:
		dependOn(drain, interim.ID)
		if !server {
			g.meanwhile.interrupt(alias, *cr, *dr)
		}
	case interim != nil:
		dependOn(drain, interim.ID)
	case !g.breakFirst[cr.Lane]:
		// Make before break: the old process drains once the alias has moved.
		dependOn(drain, s.ID)
		g.makeBeforeBreak[drain.ID] = cr.Lane
	case start == nil && s != nil:
		// The new route waits for nothing: flipping first costs nothing.
		dependOn(drain, s.ID)
	case !server:
		g.meanwhile.interrupt(alias, *cr, *dr)
	}
}

// drainAfterUnplacedRoute orders after route step s the drain of every
// process of cr's lane that goes. A route the gateway reports at no node
// (a route step cut off between readying the lane's new place and
// retiring the old, so that both serve) may reach any of them; without
// these edges, a plan made after that interruption would drain and stop
// the old place while the alias still goes there. (A lane that must break
// first is not made before it breaks anyway.)
func (g *gateway) drainAfterUnplacedRoute(cr pools.Route, s *pools.Step) {
	for _, l := range g.cur.Instances(cr.Lane) {
		if !g.gone[processOf(l)] {
			continue
		}
		if drain := g.byID[g.laneID(pools.StepDrain, l)]; drain != nil {
			dependOn(drain, s.ID)
			g.makeBeforeBreak[drain.ID] = cr.Lane
		}
	}
}

// crosses reports whether routes cr and dr reach one lane on one node and
// port, one through the node's router and the other as its own process:
// the lane's residency crosses on-demand.
func crosses(cr, dr *pools.Route) bool {
	if cr == nil || dr == nil {
		return false
	}
	was := *cr
	was.Router = dr.Router
	return was == *dr && cr.Router != dr.Router
}

func routeText(r pools.Route) string {
	if r.Lane == pools.Cloud || r.Node == "" {
		return r.Lane
	}
	return r.Lane + "@" + r.Node
}
