package controller

import (
	"fmt"
	"slices"
	"strings"

	"poolc.dev/poolc/pools"
)

// Analysis is what the controller reads from a plan: whether it is
// urgent and why, what it gains and loads, and a key that is equal for
// equal plans (whatever their timestamps).
type Analysis struct {
	// Key identifies the plan's changes: its steps and their targets.
	Key string
	// Urgent marks a plan that restores coverage (an alias with no live
	// lane gets one) or vacates a cordoned node; Why says which.
	Urgent bool
	Why    string
	// ChangesResidency marks a plan with a residency step, alone or among
	// others (a lane held warm may move where the placer has room for it).
	ChangesResidency bool
	// GainGB is the memory-weighted gain: the memory of lanes that get a
	// place (new, or an earlier candidate than any they hold now), of
	// lanes whose residency changes, and of processes the plan stops.
	GainGB float64
	// LoadGB is the weights the plan loads into memory: the size of every
	// model a keep-warm or preferred start, or a residency upgrade, loads.
	LoadGB float64
}

// Analyze reads a plan made from pool (the configuration in force,
// cordons and profile included).
func Analyze(p *pools.Plan, pool *pools.Pool) Analysis {
	a := Analysis{Key: key(p)}
	var urgent []string
	urgent = append(urgent, restored(p)...)
	urgent = append(urgent, vacated(p, pool)...)
	if len(urgent) > 0 {
		a.Urgent, a.Why = true, strings.Join(urgent, "; ")
	}
	for _, s := range p.Steps {
		if s.ChangesResidency() {
			a.ChangesResidency = true
		}
		switch s.Kind {
		case pools.StepStart:
			if s.Lane.Residency != pools.OnDemand {
				a.LoadGB += sizeOf(pool, s.Lane.Model)
			}
		case pools.StepResidency:
			a.GainGB += s.Lane.MemoryGB
			if s.From == pools.OnDemand && s.Lane.Residency != pools.OnDemand {
				a.LoadGB += sizeOf(pool, s.Lane.Model)
			}
		case pools.StepStop:
			a.GainGB += s.Lane.MemoryGB
		}
	}
	a.GainGB += placementGain(p, pool)
	return a
}

// key lists each step with what it changes, in plan order.
func key(p *pools.Plan) string {
	var b strings.Builder
	for _, s := range p.Steps {
		b.WriteString(s.ID)
		switch {
		case s.Route != nil:
			fmt.Fprintf(&b, "=%s@%s", s.Route.Lane, s.Route.Node)
		case s.ChangesResidency():
			fmt.Fprintf(&b, "=%s", s.Lane.Residency)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// restored names the aliases that have no live lane before the plan and
// one after it. A lane is live when the fleet holds its process on a node
// that is not down.
func restored(p *pools.Plan) []string {
	var out []string
	down := p.Before.DownNodes()
	for _, r := range p.After.Routes {
		if _, server := pools.LaneServerOf(r.Alias); server || r.Lane == pools.Cloud || live(&p.Before, down, p.Before.Route(r.Alias)) {
			continue
		}
		out = append(out, fmt.Sprintf("alias %s has no live lane; the plan gives it %s@%s", r.Alias, r.Lane, r.Node))
	}
	return out
}

// live reports whether route r reaches a process of its lane in f on a
// node that is not down.
func live(f *pools.Fleet, down map[string]bool, r *pools.Route) bool {
	return r != nil && r.Lane != pools.Cloud && f.Lane(r.Lane, r.Node) != nil && !down[r.Node]
}

// vacated names the cordoned nodes the plan drains or stops lanes on.
func vacated(p *pools.Plan, pool *pools.Pool) []string {
	cordoned := pool.Under(p.Profile).Cordoned
	var nodes []string
	for _, s := range p.Steps {
		if (s.Kind == pools.StepDrain || s.Kind == pools.StepStop) && cordoned[s.Node] && !slices.Contains(nodes, s.Node) {
			nodes = append(nodes, s.Node)
		}
	}
	slices.Sort(nodes)
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = "the plan vacates cordoned node " + n
	}
	return out
}

// placementGain is the memory of the lanes the plan places better: lanes
// not running before, and lanes that end on an earlier candidate than the
// best node they run on before.
func placementGain(p *pools.Plan, pool *pools.Pool) float64 {
	view := pool.Under(p.Profile)
	gain := 0.0
	for _, l := range p.After.Lanes {
		before := p.Before.Instances(l.Name)
		if len(before) == 0 {
			gain += l.MemoryGB
			continue
		}
		if slices.ContainsFunc(before, func(b pools.LaneState) bool { return b.Node == l.Node }) {
			continue
		}
		i, found := slices.BinarySearchFunc(view.Lanes, l.Name, func(v pools.Lane, name string) int { return strings.Compare(v.Name, name) })
		if !found {
			continue
		}
		cands := pool.Candidates(view.Lanes[i])
		best := len(cands)
		for _, b := range before {
			if i := slices.Index(cands, b.Node); i >= 0 && i < best {
				best = i
			}
		}
		if i := slices.Index(cands, l.Node); i >= 0 && i < best {
			gain += l.MemoryGB
		}
	}
	return gain
}

func sizeOf(pool *pools.Pool, model string) float64 {
	if m := pool.Model(model); m != nil {
		return m.SizeGB
	}
	return 0
}
