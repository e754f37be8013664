package validate

import (
	"fmt"
	"slices"
	"strings"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/pools"
)

// capacity checks memory under the active profile, then under each other
// profile for findings the active one does not already show:
//   - every lane fits alone on at least one of its candidate nodes;
//   - the keep-warm lanes pinned to a node (it is their only candidate) fit
//     its budget together;
//   - every other lane can load beside the keep-warm lanes pinned to at
//     least one of its candidates;
//   - with every node up, the placer finds a node for every lane (an
//     error for a keep-warm lane, a warning for the others, whose aliases
//     fall back).
func (v *validator) capacity() {
	order := []string{v.p.ActiveProfile}
	for _, pr := range v.p.Profiles {
		if pr.Name != v.p.ActiveProfile {
			order = append(order, pr.Name)
		}
	}
	seen := map[string]bool{}
	for i, profile := range order {
		if i > 0 && v.p.Profile(profile) == nil {
			continue
		}
		found := v.capacityUnder(v.view(profile))
		found = append(found, v.unplaceable(profile, found)...)
		for _, d := range found {
			if seen[d.Message] {
				continue
			}
			seen[d.Message] = true
			if i > 0 {
				d.Message += fmt.Sprintf(" (under profile %q)", profile)
			}
			v.diags = append(v.diags, d)
		}
	}
}

func (v *validator) capacityUnder(view pools.View) pools.Diagnostics {
	var out pools.Diagnostics
	pinned := map[string][]pools.Lane{}       // keep-warm lanes whose only candidate is the node
	fits := make([][]string, len(view.Lanes)) // by lane: the candidates it fits on alone
	for li, l := range view.Lanes {
		m := v.p.Model(l.Model)
		if m == nil {
			continue // reported as a reference error
		}
		all := v.p.CandidatesIn(v.nodes, l)
		cands := kept(all, func(n string) bool { return !view.Cordoned[n] })
		if len(cands) == 0 {
			if cordoned := all; len(cordoned) > 0 {
				sev := pools.Warning
				if l.Residency == pools.KeepWarm {
					sev = pools.Error
				}
				out = append(out, pools.Diagnostic{Severity: sev, Code: "no-node", Path: pools.Path{"lane", l.Name},
					Message: fmt.Sprintf("lane %q (%s) has no node it may run on: %s %s cordoned", l.Name, l.Residency, names(cordoned), plural.Agree(len(cordoned), "is", "are"))})
			}
			continue
		}
		fits[li] = kept(cands, func(n string) bool { return m.MemoryGB <= v.nodes[n].Budget()+epsilon })
		if len(fits[li]) == 0 && v.allReservedOut(cands) {
			continue // the guard's finding explains it
		}
		if len(fits[li]) == 0 {
			parts := make([]string, len(cands))
			for i, n := range cands {
				parts[i] = n + " " + v.p.Node(n).BudgetText()
			}
			out.Errorf("too-large", pools.Path{"lane", l.Name}, "lane %q needs %s, more than the budget of every node it may run on: %s", l.Name, pools.GB(m.MemoryGB), strings.Join(parts, "; "))
			continue
		}
		if l.Residency == pools.KeepWarm && len(cands) == 1 {
			pinned[cands[0]] = append(pinned[cands[0]], l)
		}
	}
	for _, n := range v.p.Nodes {
		lanes := pinned[n.Name]
		if total := v.sum(lanes); total > n.Budget()+epsilon && !v.reservedOut[n.Name] {
			out.Errorf("over-budget", pools.Path{"node", n.Name}, "%s: keep-warm lanes %s need %s together: %s", n.Name, v.laneList(lanes), pools.GB(total), n.BudgetText())
		}
	}
	for li, l := range view.Lanes {
		if l.Residency == pools.KeepWarm || len(fits[li]) == 0 {
			continue
		}
		need := v.p.Model(l.Model).MemoryGB
		var clauses []string
		loadable := false
		for _, name := range fits[li] {
			n := *v.nodes[name]
			held := v.sum(pinned[name])
			if need <= n.Budget()-held+epsilon {
				loadable = true
				break
			}
			clauses = append(clauses, fmt.Sprintf("%s: beside keep-warm lanes %s: %s, %s pinned, %s free",
				name, v.laneList(pinned[name]), n.BudgetText(), pools.GB(held), pools.GB(n.Budget()-held)))
		}
		if loadable {
			continue
		}
		if len(clauses) == 1 {
			out.Errorf("never-loads", pools.Path{"lane", l.Name}, "%s: %s (%s, %s) can never load %s", fits[li][0], l.Name, pools.GB(need), l.Residency, strings.TrimPrefix(clauses[0], fits[li][0]+": "))
			continue
		}
		out.Errorf("never-loads", pools.Path{"lane", l.Name}, "%s (%s, %s) can never load on any of its nodes: %s", l.Name, pools.GB(need), l.Residency, strings.Join(clauses, "; "))
	}
	return out
}

// unplaceable reports the lanes the placer cannot place under a profile
// with every node up. It stays quiet when the rules above found a problem,
// and on a lane they found one for (a warning such as "its nodes are
// cordoned"): theirs is the sharper explanation, and placement follows
// from it.
func (v *validator) unplaceable(profile string, explained pools.Diagnostics) pools.Diagnostics {
	if explained.HasErrors() {
		return nil
	}
	said := map[string]bool{}
	for _, d := range explained {
		if len(d.Path) >= 2 && d.Path[0] == "lane" {
			said[d.Path[1]] = true
		}
	}
	var out pools.Diagnostics
	for _, u := range place.Unplaced(place.Input{Pool: v.p, Profile: profile}) {
		if len(u.Excluded) == 0 || said[u.Lane] {
			continue // no candidate at all, or a finding above: it says why
		}
		sev := pools.Warning
		if u.Residency == pools.KeepWarm {
			sev = pools.Error
		}
		parts := make([]string, len(u.Excluded))
		excluded := make([]string, len(u.Excluded))
		for i, e := range u.Excluded {
			parts[i] = e.Node + " " + e.Why
			excluded[i] = e.Node
		}
		if v.allReservedOut(excluded) {
			continue // the guard's finding explains it
		}
		out = append(out, pools.Diagnostic{Severity: sev, Code: "unplaceable", Path: pools.Path{"lane", u.Lane},
			Message: fmt.Sprintf("lane %q (%s, %s) cannot be placed: %s", u.Lane, pools.GB(u.MemoryGB), u.Residency, strings.Join(parts, "; "))})
	}
	return out
}

// allReservedOut reports whether every node named is one whose guard
// reserve takes all its memory.
func (v *validator) allReservedOut(nodes []string) bool {
	for _, n := range nodes {
		if !v.reservedOut[n] {
			return false
		}
	}
	return true
}

// kept is the nodes of ns that ok keeps, in order: ns itself when it
// keeps them all (the common case, which so allocates nothing), else a new
// slice. Neither ns nor the result may be changed afterwards.
func kept(ns []string, ok func(string) bool) []string {
	for i, n := range ns {
		if ok(n) {
			continue
		}
		out := slices.Clone(ns[:i])
		for _, n := range ns[i+1:] {
			if ok(n) {
				out = append(out, n)
			}
		}
		return out
	}
	return ns
}

// epsilon absorbs float rounding in GB sums (0.1 + 0.2 > 0.3).
const epsilon = 1e-9

func (v *validator) sum(lanes []pools.Lane) float64 {
	total := 0.0
	for _, l := range lanes {
		total += v.p.Model(l.Model).MemoryGB
	}
	return total
}

// laneList shows lanes with their memory: "cognition (30 GB) and embeddings (12 GB)".
func (v *validator) laneList(lanes []pools.Lane) string {
	parts := make([]string, len(lanes))
	for i, l := range lanes {
		parts[i] = fmt.Sprintf("%s (%s)", l.Name, pools.GB(v.p.Model(l.Model).MemoryGB))
	}
	return names(parts)
}
