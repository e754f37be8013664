package llama

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// routerPort is the configured router port, else pools.DefaultRouterPort
// (the haproxy plugin's router_port has the same default).
func (c PluginConfig) routerPort() int {
	if c.RouterPort > 0 {
		return c.RouterPort
	}
	return pools.DefaultRouterPort
}

// onDemand reports whether a step's lane is served by its node's router.
func onDemand(l *sdk.Lane) bool { return l.Residency == sdk.OnDemand }

// routerModel is lane l as a model of its node's router.
func routerModel(l *sdk.Lane) RouterModel {
	return RouterModel{Name: l.Name, Path: l.Model.Path, Aliases: slices.Clone(l.Aliases), Args: slices.Clone(l.Model.Args), MemoryGB: l.Model.MemoryGB,
		SHA256: l.Model.SHA256, Source: l.Model.Source}
}

// routerSpec is the router node runs once its on-demand lanes are models:
// listening where the node's lanes do, on the router port, with
// --models-max from the node's budget beside its reserved lanes (those
// with their own process, except the lane leaving, whose memory the
// change frees): 0, no bound, when every model fits at once.
func (a *Actuator) routerSpec(ctx context.Context, node sdk.Node, n *Node, models []RouterModel, leaving string) (RouterSpec, error) {
	host := a.cfg.ListenHost
	if host == "" {
		host = node.Address
	}
	spec := RouterSpec{Host: host, Port: a.cfg.routerPort(), Models: models}
	if len(models) == 0 {
		return spec, nil
	}
	st, err := n.procs.status(ctx)
	if err != nil {
		return spec, err
	}
	memory := map[string]float64{}
	for _, m := range a.inventory().Models {
		memory[m.Path] = m.MemoryGB
	}
	reserved := 0.0
	for name, r := range st.records {
		if name != RouterLane && r.meta.Name != leaving && r.alive && r.isLane(r.meta.lane()) {
			reserved += memory[r.meta.Model]
		}
	}
	sizes := make([]float64, len(models))
	for i, m := range models {
		sizes[i] = m.MemoryGB
	}
	if node.BudgetGB <= 0 && node.MemoryGB <= 0 {
		// A node whose memory poolc is not told: no bound.
		return spec, nil
	}
	room := node.BudgetGB - reserved
	k := ModelsMax(room, sizes)
	if k < 1 {
		return spec, fmt.Errorf("node %s: the largest on-demand model (%.1f GB) does not fit in the %.1f GB its budget (%.1f GB) leaves beside its reserved lanes (%.1f GB)",
			node.Name, slices.Max(sizes), room, node.BudgetGB, reserved)
	}
	current := -1
	if r, ok := st.records[RouterLane]; ok && r.alive {
		if v, err := strconv.Atoi(r.modelsMax()); err == nil && v >= 0 {
			current = v
		}
	}
	spec.ModelsMax = keptBound(k, len(models), current)
	return spec, nil
}

// keptBound is the --models-max of a router with n models whose k largest
// fit in its room (k >= 1), given the bound of the router running now
// (-1 for none). The running bound is kept while it is still safe (the
// models it lets be loaded at once fit), since the router reads it only
// at startup and a change restarts it: a change that frees memory or
// removes a model restarts nothing. Otherwise the bound is 0 (none) when
// every model fits at once, else k.
func keptBound(k, n, current int) int {
	if current >= 0 {
		loaded := current
		if current == 0 || current > n {
			loaded = n
		}
		if loaded <= k {
			return current
		}
	}
	if k >= n {
		return 0
	}
	return k
}

// changeRouter makes the node's router serve its current models with
// lane l added (add: in place of the lane's model there, if any) or
// removed (only the model the step names: the stop of a lane's old
// weights or args leaves its new ones), restarting it when that changes its
// preset or --models-max, stopping it when no model is left. Changes of
// one node's router run one at a time (router.changes), so the on-demand
// steps of one apply, run in parallel, each build on the last: none is
// lost, whatever order they run in.
func (a *Actuator) changeRouter(ctx context.Context, n *Node, l *sdk.Lane, add bool, progress Progress) error {
	n.router.changes.Lock()
	defer n.router.changes.Unlock()
	current, err := n.RouterServes(ctx)
	if err != nil {
		return err
	}
	declared, inPool := a.declaredArgs(l.Name)
	models := slices.DeleteFunc(slices.Clone(current), func(m RouterModel) bool {
		if m.Name != l.Name || !add && m.Path != l.Model.Path {
			return false
		}
		// The stop of a lane replaced for its args (same weights, other
		// arguments) leaves its new section, which the start put in its
		// place: the one with the pool's args, when the lane stopping
		// runs others.
		return add || !inPool || !sameOptions(m.Args, declared) || sameOptions(l.Model.Args, declared)
	})
	leaving := ""
	if add {
		models = append(models, routerModel(l))
		leaving = l.Name // its own process, if any, is on its way out
	}
	spec, err := a.routerSpec(ctx, l.Node, n, models, leaving)
	if err != nil {
		return err
	}
	return n.EnsureRouter(ctx, spec, progress)
}

// declaredArgs are the args of lane name's model in the pool, and whether
// the pool has the lane.
func (a *Actuator) declaredArgs(name string) ([]string, bool) {
	inv := a.inventory()
	for _, l := range inv.Lanes {
		if l.Name != name {
			continue
		}
		for _, m := range inv.Models {
			if m.Name == l.Model {
				return m.Args, true
			}
		}
	}
	return nil, false
}

// drainOnDemand waits for the router's requests for lane l to finish.
func (a *Actuator) drainOnDemand(ctx context.Context, n *Node, l *sdk.Lane, progress Progress) error {
	spec, err := a.routerSpec(ctx, l.Node, n, nil, "")
	if err != nil {
		return err
	}
	return n.DrainRouterModel(ctx, spec, l.Name, progress)
}
