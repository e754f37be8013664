package plan

import (
	"fmt"

	"poolc.dev/poolc/pools"
)

// interims lays out what serves an alias while its lane breaks first: an
// interim route, or the alias's withdrawal and the interruption the plan
// reports.
type interims struct {
	*draft
	why           *reasons
	interruptions []pools.Interruption
	// stableByModel indexes, when first needed, the current lanes that can
	// serve meanwhile by model (interimLanes).
	stableByModel map[string][]pools.LaneState
}

func interimID(alias string) string { return "route:" + alias + "~interim" }

// interim routes an alias, while its lane breaks first, to a lane that
// stays up through the plan: one serving the same model, else the first
// such declared fallback (cloud included). A lane served by its node's
// router is no interim: the router answers only to the names in the
// lane's own section, and the request still names the alias (400 "model
// not found"), whereas a process of its own serves whatever name.
func (it *interims) interim(alias string, cr pools.Route) *pools.Step {
	var to *pools.Route
	var why string
	for _, l := range it.interimLanes(it.modelOf(cr)) {
		if l.Name != cr.Lane {
			to, why = routeTo(alias, l), "it serves the same model"
			break
		}
	}
	if to == nil {
		for _, a := range it.in.Pool.Aliases {
			if a.Name != alias {
				continue
			}
			for _, f := range a.Fallbacks {
				if f == pools.Cloud {
					to, why = &pools.Route{Alias: alias, Lane: pools.Cloud}, "it is a declared fallback"
					break
				}
				if l := it.stable(f); l != nil {
					to, why = routeTo(alias, *l), "it is a declared fallback"
					break
				}
			}
		}
	}
	if to == nil {
		return nil
	}
	return it.add(pools.Step{
		ID: interimID(alias), Kind: pools.StepRoute, Target: alias, Node: to.Node, Route: to,
		Reason:   fmt.Sprintf("because lane %s must stop before it can start again; %s serves %s meanwhile: %s", cr.Lane, routeText(*to), alias, why),
		Estimate: pools.Estimate{Seconds: RouteSeconds},
	})
}

// stable returns a process of the named lane that stays up through the
// plan and serves as its own process, or nil. The processes the plan stops
// are all known once its lanes are laid out, before its routes.
func (it *interims) stable(name string) *pools.LaneState {
	for _, l := range it.cur.Instances(name) {
		if !it.gone[processOf(l)] && it.des.Process(l.Name, l.Node, l.Port) != nil && l.Residency != pools.OnDemand {
			return &l
		}
	}
	return nil
}

// interimLanes lists, in the current fleet's order, the current lanes of
// model whose lane has a stable process (see stable): the lanes an
// interrupted alias of that model may be routed to meanwhile. The lanes of
// each model are listed once per plan.
func (it *interims) interimLanes(model string) []pools.LaneState {
	if lanes, ok := it.stableByModel[model]; ok {
		return lanes
	}
	var lanes []pools.LaneState
	for _, l := range it.cur.Lanes {
		if l.Model == model && it.stable(l.Name) != nil {
			lanes = append(lanes, l)
		}
	}
	if it.stableByModel == nil {
		it.stableByModel = map[string][]pools.LaneState{}
	}
	it.stableByModel[model] = lanes
	return lanes
}

// withdraw takes alias off the gateway while its lane breaks first and
// nothing can serve it meanwhile (an interruption): the lane's drain waits
// for the requests in flight, which can end only once no new ones arrive.
// The alias's route step puts it back once the lane has started again.
func (it *interims) withdraw(alias string, cr pools.Route) *pools.Step {
	reason := fmt.Sprintf("because lane %s must stop before it can start again and nothing else can serve %s: the gateway sends it nowhere, so that the requests in flight on %s finish and the lane drains",
		cr.Lane, alias, routeText(cr))
	if _, server := pools.LaneServerOf(alias); server {
		reason = fmt.Sprintf("because lane %s must stop before it can start again: its server at the gateway goes meanwhile, so that no request falls back to it while it drains", cr.Lane)
	}
	return it.add(pools.Step{
		ID: interimID(alias), Kind: pools.StepRoute, Target: alias, Route: &pools.Route{Alias: alias},
		Reason: reason, Estimate: pools.Estimate{Seconds: RouteSeconds},
	})
}

// routeTo is the route of alias to process l: through its node's router
// when l is an on-demand lane.
func routeTo(alias string, l pools.LaneState) *pools.Route {
	return &pools.Route{Alias: alias, Lane: l.Name, Node: l.Node, Port: l.Port, Router: l.Residency == pools.OnDemand}
}

func (it *interims) modelOf(r pools.Route) string {
	if l := it.cur.Serves(r); l != nil {
		return l.Model
	}
	return ""
}

func (it *interims) interrupt(alias string, cr, dr pools.Route) {
	seconds := DrainSeconds + StopSeconds + StartSeconds
	l := it.des.Serves(dr)
	if l != nil {
		seconds += it.sizeOf(l.Model) / LoadGBps
	}
	why := fmt.Sprintf("lane %s must stop on %s before %s can start", cr.Lane, cr.Node, routeText(dr))
	if l != nil && cr.Lane == dr.Lane && cr.Node == dr.Node {
		why = fmt.Sprintf("lane %s is replaced on %s but its old process must stop before the new one can start (%s)",
			cr.Lane, cr.Node, it.why.budgetText(dr.Node, l.Reserved()))
	}
	it.interruptions = append(it.interruptions, pools.Interruption{
		Alias: alias, Lane: cr.Lane, Seconds: seconds,
		Reason: fmt.Sprintf("%s, and no lane of the same model or declared fallback can serve %s meanwhile", why, alias),
	})
}
