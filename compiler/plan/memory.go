package plan

import (
	"sort"

	"poolc.dev/poolc/pools"
)

// budgets orders the steps of a plan so that every node stays within its
// memory budget.
type budgets struct {
	*draft
}

// memory adds the edges that keep every node within its budget in every
// order. Per node, the steps that add reserved memory are split in two:
// those that fit beside the current lanes even if they all run first (A),
// and the rest (B). Every B step waits for a set S of steps that free
// memory, chosen so that once S is done everything fits:
// base + A + B - S <= budget. Before S is done only A can have run, and
// base + A <= budget. Steps that free memory without waiting on a new
// process (residency downgrades, removals) are chosen first. The budget
// here is the node's less its load headroom, so a start's transient peak
// while its model loads fits too.
func (m *budgets) memory() {
	base := map[string]float64{}
	for _, l := range m.cur.Lanes {
		base[l.Node] += l.Reserved()
	}
	inc, dec := map[string][]*pools.Step{}, map[string][]*pools.Step{}
	for _, s := range m.steps {
		switch d := s.Estimate.MemoryGB; {
		case s.Node == "" || d == 0:
		case d > 0:
			inc[s.Node] = append(inc[s.Node], s)
		default:
			dec[s.Node] = append(dec[s.Node], s)
		}
	}
	down := m.des.DownNodes()
	for _, n := range m.in.Pool.Nodes {
		ups := inc[n.Name]
		if len(ups) == 0 || down[n.Name] {
			continue
		}
		budget := n.Budget() - n.LoadHeadroomGB // a start's transient load peak
		sort.Slice(ups, func(i, j int) bool { return ups[i].ID < ups[j].ID })
		total, fitsFirst := 0.0, 0
		for i, s := range ups {
			total += s.Estimate.MemoryGB
			if base[n.Name]+total <= budget+epsilon && fitsFirst == i {
				fitsFirst = i + 1
			}
		}
		if fitsFirst == len(ups) {
			continue
		}
		need := base[n.Name] + total - budget
		frees := dec[n.Name]
		sort.Slice(frees, func(i, j int) bool {
			a, c := frees[i], frees[j]
			if pa, pc := m.freePreference(a), m.freePreference(c); pa != pc {
				return pa < pc
			}
			if a.Estimate.MemoryGB != c.Estimate.MemoryGB {
				return a.Estimate.MemoryGB < c.Estimate.MemoryGB // larger frees first
			}
			return a.ID < c.ID
		})
		var chosen []string
		freed := 0.0
		for _, s := range frees {
			if freed >= need-epsilon {
				break
			}
			chosen = append(chosen, s.ID)
			freed -= s.Estimate.MemoryGB
		}
		for _, s := range ups[fitsFirst:] {
			dependOn(s, chosen...)
		}
	}
}

// epsilon absorbs float rounding in GB sums.
const epsilon = 1e-9

// freePreference ranks steps that free memory: residency downgrades, then
// stops that wait on no new process, then stops of lanes that move.
func (m *budgets) freePreference(s *pools.Step) int {
	switch {
	case s.Kind == pools.StepResidency:
		return 0
	case m.makeBeforeBreak[m.laneID(pools.StepDrain, *s.Lane)] == "":
		return 1
	}
	return 2
}
