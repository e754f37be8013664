package render

import (
	"fmt"
	"io"
	"strings"

	"poolc.dev/poolc/pools"
)

// NodeMemory is one node's memory as a fleet uses it: the budget, the
// declared and the estimated memory of the lanes placed there, what the
// planner counts at most (the loaded lanes and the largest on-demand lane
// beside them) and the headroom that leaves.
type NodeMemory struct {
	Node   string
	Budget string // the node's BudgetText
	// Lanes counts the lanes placed on the node; Declared and Estimated
	// count those whose model declares memory_gb and has an estimate, and
	// DeclaredGB and EstimatedGB sum their memory.
	Lanes, Declared, Estimated int
	DeclaredGB, EstimatedGB    float64
	// AssumedGB is the most the planner counts on the node at once;
	// HeadroomGB the budget left beside it (negative when over).
	AssumedGB, HeadroomGB float64
}

// HasEstimates reports whether any model of the pool has a memory
// estimate: only then do the plan and validate -v show the memory table,
// so pools that declare every model's memory keep their output.
func HasEstimates(p *pools.Pool) bool {
	for _, m := range p.Models {
		if m.Estimate != nil {
			return true
		}
	}
	return false
}

// Memory computes the memory table of the nodes the fleet places lanes on,
// in node order.
func Memory(p *pools.Pool, f pools.Fleet) []NodeMemory {
	var rows []NodeMemory
	for _, n := range p.Nodes {
		r := NodeMemory{Node: n.Name, Budget: n.BudgetText()}
		largest := 0.0
		for _, l := range f.Lanes {
			if l.Node != n.Name {
				continue
			}
			r.Lanes++
			if m := p.Model(l.Model); m != nil {
				if m.Declared {
					r.Declared++
					r.DeclaredGB += m.MemoryGB
				}
				if m.Estimate != nil {
					r.Estimated++
					r.EstimatedGB += m.Estimate.GB
				}
			}
			if l.Residency == pools.OnDemand {
				largest = max(largest, l.MemoryGB)
			} else {
				r.AssumedGB += l.MemoryGB
			}
		}
		if r.Lanes == 0 {
			continue
		}
		r.AssumedGB += largest
		r.HeadroomGB = n.Budget() - r.AssumedGB
		rows = append(rows, r)
	}
	return rows
}

// sum shows a column's total and how many lanes it covers: "30 GB",
// "30 GB (1 of 2 lanes)", "-".
func sum(gb float64, n, of int) string {
	switch {
	case n == 0:
		return "-"
	case n < of:
		return fmt.Sprintf("%s (%d of %d lanes)", pools.GB(gb), n, of)
	}
	return pools.GB(gb)
}

// MemoryText writes the memory table for a terminal.
func MemoryText(w io.Writer, rows []NodeMemory) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nMemory per node (assumed: loaded lanes plus the largest on-demand lane):")
	for _, r := range rows {
		fmt.Fprintf(w, "  %s: %s · declared %s · estimated %s · assumed %s · headroom %s\n",
			r.Node, r.Budget, sum(r.DeclaredGB, r.Declared, r.Lanes), sum(r.EstimatedGB, r.Estimated, r.Lanes),
			pools.GB(r.AssumedGB), pools.GB(r.HeadroomGB))
	}
}

// MemoryMarkdown writes the memory table for a pull-request comment.
func MemoryMarkdown(w io.Writer, rows []NodeMemory) {
	if len(rows) == 0 {
		return
	}
	var b strings.Builder
	b.WriteString("\n**Memory per node** (assumed: loaded lanes plus the largest on-demand lane)\n\n")
	b.WriteString("| node | budget | declared | estimated | assumed | headroom |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(r.Node), cell(strings.TrimPrefix(r.Budget, "budget ")),
			sum(r.DeclaredGB, r.Declared, r.Lanes), sum(r.EstimatedGB, r.Estimated, r.Lanes), pools.GB(r.AssumedGB), pools.GB(r.HeadroomGB))
	}
	io.WriteString(w, b.String())
}
