package plan

import (
	"fmt"
	"slices"
	"strings"

	"poolc.dev/poolc/pools"
)

// reasons words the reasons of a plan's steps from its draft. Indexes are
// made when first needed, in place of a scan of the fleet or the pool per
// step.
type reasons struct {
	*draft
	// view is the pool under the plan's profile (viewLane).
	view *pools.View
	// fallbacksTo lists the aliases falling back to each lane
	// (fallingBack), heldOn the memory the current lanes hold per node
	// (budgetText).
	fallbacksTo map[string][]string
	heldOn      map[string]float64
}

// startReason says why a lane's process starts where it does.
func (r *reasons) startReason(d pools.LaneState) string {
	old := r.cur.Instances(d.Name)
	if len(old) == 0 {
		why := r.excludedText(d.Name)
		if why != "" {
			return fmt.Sprintf("because lane %s is not running; it goes to %s: %s", d.Name, d.Node, why)
		}
		return fmt.Sprintf("because lane %s is not running", d.Name)
	}
	return r.moveReason(old[0].Node, d)
}

// moveReason says why a lane leaves the node it is on for d.Node.
func (r *reasons) moveReason(from string, d pools.LaneState) string {
	head := fmt.Sprintf("because lane %s moves from %s to %s", d.Name, from, d.Node)
	for _, e := range r.in.Placement.Why[d.Name] {
		if e.Node == from {
			return fmt.Sprintf("%s: %s %s", head, from, e.Why)
		}
	}
	if l := r.viewLane(d.Name); l != nil && !slices.Contains(r.in.Pool.Candidates(*l), from) {
		return fmt.Sprintf("%s: %s is no longer a candidate in its placement", head, from)
	}
	return fmt.Sprintf("%s: %s comes first in its placement and has room", head, d.Node)
}

// viewLane is the named lane as the plan's profile shapes it, or nil.
// The view is made once per plan: a plan that moves many lanes asks
// for many of them.
func (r *reasons) viewLane(name string) *pools.Lane {
	if r.view == nil {
		v := r.in.Pool.Under(r.in.Profile)
		r.view = &v
	}
	lanes := r.view.Lanes // in name order, as the pool's
	i, ok := slices.BinarySearchFunc(lanes, name, func(l pools.Lane, name string) int { return strings.Compare(l.Name, name) })
	if !ok {
		return nil
	}
	return &lanes[i]
}

// retireReason says why a lane's process on c.Node stops.
func (r *reasons) retireReason(c pools.LaneState, d *pools.LaneState) string {
	switch {
	case d == nil:
		for _, u := range r.in.Placement.Unplaced {
			if u.Lane == c.Name {
				return fmt.Sprintf("because lane %s cannot be placed: %s", c.Name, exclusionText(u.Excluded))
			}
		}
		return fmt.Sprintf("because lane %s is no longer in the configuration", c.Name)
	case d.Node == c.Node && d.Port == c.Port && !sameProcess(c, *d):
		return r.crossReason(c, *d)
	case d.Node == c.Node && d.Port == c.Port:
		return fmt.Sprintf("because lane %s changes in place: %s", c.Name, processChange(c, *d))
	case d.Node == c.Node:
		return fmt.Sprintf("because lane %s on %s is replaced by its new process on port %d: %s", c.Name, c.Node, d.Port, r.replaceText(c, *d))
	}
	return r.moveReason(c.Node, *d)
}

func (r *reasons) excludedText(lane string) string {
	return exclusionText(r.in.Placement.Why[lane])
}

func exclusionText(ex []pools.Exclusion) string {
	parts := make([]string, len(ex))
	for i, e := range ex {
		parts[i] = e.Node + " " + e.Why
	}
	return strings.Join(parts, "; ")
}

func processChange(c, d pools.LaneState) string {
	var parts []string
	if c.Model != d.Model {
		parts = append(parts, fmt.Sprintf("model %s → %s", c.Model, d.Model))
	}
	if c.SHA256 != d.SHA256 && c.SHA256 != "" && d.SHA256 != "" {
		parts = append(parts, fmt.Sprintf("model %s sha256 %s → %s", d.Model, pools.ShortDigest(c.SHA256), pools.ShortDigest(d.SHA256)))
	}
	if c.Source != d.Source && c.Source != "" && d.Source != "" {
		parts = append(parts, fmt.Sprintf("model %s source %s → %s", d.Model, c.Source, d.Source))
	}
	if c.Path != d.Path {
		parts = append(parts, fmt.Sprintf("weights %s → %s", c.Path, d.Path))
	}
	if c.Port != d.Port {
		parts = append(parts, fmt.Sprintf("port %d → %d", c.Port, d.Port))
	}
	if !slices.Equal(c.Args, d.Args) {
		parts = append(parts, fmt.Sprintf("args [%s] → [%s]", strings.Join(c.Args, " "), strings.Join(d.Args, " ")))
	}
	if !sameRouterAliases(c, d) {
		parts = append(parts, fmt.Sprintf("router aliases [%s] → [%s]", strings.Join(c.Aliases, " "), strings.Join(d.Aliases, " ")))
	}
	return strings.Join(parts, ", ")
}

// crossRouteReason says why an alias is routed again to lane l, whose
// residency crosses on-demand: the gateway reaches it elsewhere.
func crossRouteReason(l pools.LaneState) string {
	if l.Residency == pools.OnDemand {
		return fmt.Sprintf("because lane %s is now on-demand: %s's router serves it", l.Name, l.Node)
	}
	return fmt.Sprintf("because lane %s is now %s: its own process on %s serves it", l.Name, l.Residency, l.Node)
}

// crossReason says why lane c starts again as d: its residency crosses
// on-demand, between a process of its own and its node's router.
func (r *reasons) crossReason(c, d pools.LaneState) string {
	how := "its own process starts and takes over from the node's router"
	if d.Residency == pools.OnDemand {
		how = "the node's router takes it over from its own process"
	}
	return r.residencyReason(d.Name, c.Residency, d.Residency) + "; " + how
}

func (r *reasons) residencyReason(lane string, from, to pools.Residency) string {
	if pr := r.in.Pool.Profile(r.in.Profile); pr != nil {
		for _, o := range pr.Lanes {
			if o.Lane == lane && o.Residency == to {
				return fmt.Sprintf("because profile %s makes lane %s %s (was %s)", pr.Name, lane, to, from)
			}
		}
	}
	return fmt.Sprintf("because lane %s is now %s (was %s)", lane, to, from)
}

func (r *reasons) routeReason(cr, dr *pools.Route) string {
	alias := cr
	if alias == nil {
		alias = dr
	}
	lane, server := pools.LaneServerOf(alias.Alias)
	switch {
	case server && dr == nil:
		return fmt.Sprintf("because no alias falls back to lane %s without one routing to it: its server at the gateway goes, unless an alias's route uses it", lane)
	case server && cr == nil:
		return fmt.Sprintf("because %s falls back to lane %s, which no alias routes to: the gateway needs a server where it runs", r.fallingBack(lane), lane)
	case dr == nil:
		for _, u := range r.in.Placement.Unserved {
			if u.Alias == cr.Alias {
				return fmt.Sprintf("because alias %s has no lane left: %s", cr.Alias, u.Why)
			}
		}
		return fmt.Sprintf("because alias %s is no longer declared", cr.Alias)
	case cr == nil:
		return fmt.Sprintf("because alias %s is not routed yet", dr.Alias)
	case *cr == *dr:
		return fmt.Sprintf("because lane %s is back on %s", dr.Lane, dr.Node)
	case cr.Lane == dr.Lane && cr.Node == dr.Node:
		return fmt.Sprintf("because lane %s on %s is replaced: its new process listens on port %d", dr.Lane, dr.Node, dr.Port)
	case cr.Lane == dr.Lane && cr.Node == "":
		return fmt.Sprintf("because the gateway sends alias %s to lane %s on no node of the pool (a gateway that lost its routes, or a route set by hand): it goes to %s", dr.Alias, dr.Lane, dr.Node)
	case cr.Lane == dr.Lane:
		return fmt.Sprintf("because lane %s moves from %s to %s", dr.Lane, cr.Node, dr.Node)
	}
	return fmt.Sprintf("because alias %s now goes to %s (was %s)", dr.Alias, routeText(*dr), routeText(*cr))
}

// fallingBack names the aliases whose declared fallbacks include lane.
func (r *reasons) fallingBack(lane string) string {
	if r.fallbacksTo == nil {
		r.fallbacksTo = map[string][]string{}
		for _, a := range r.in.Pool.Aliases {
			for i, f := range a.Fallbacks {
				if !slices.Contains(a.Fallbacks[:i], f) {
					r.fallbacksTo[f] = append(r.fallbacksTo[f], a.Name)
				}
			}
		}
	}
	names := r.fallbacksTo[lane]
	if len(names) == 1 {
		return "alias " + names[0]
	}
	return "aliases " + strings.Join(names, ", ")
}
