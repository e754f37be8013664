package orchestrate

import (
	"fmt"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/pools"
)

// ObservedMemory compares each lane process's resident memory, as the
// last refresh read it on its node, with the memory the configuration
// makes the planner assume for its model (declared memory_gb, or the
// estimate from the GGUF header), and warns of each process more than
// tolerance above it (compiler.MemoryTolerance is validate's): the
// budgets and the guard count the assumed figure, so a lane that holds
// more can make a later load on its node abort. A process whose memory
// is unknown, or whose model the configuration no longer holds, is
// skipped: there is nothing to compare.
func ObservedMemory(p *pools.Pool, f pools.Fleet, tolerance float64) pools.Diagnostics {
	var diags pools.Diagnostics
	for _, l := range f.Lanes {
		m := p.Model(l.Model)
		if l.Observed == nil || l.Observed.ResidentBytes <= 0 || m == nil || m.MemoryGB <= 0 {
			continue
		}
		observed := float64(l.Observed.ResidentBytes) / 1e9
		if observed <= m.MemoryGB*(1+tolerance) {
			continue
		}
		from, path := "estimated from its GGUF header", pools.Path{"model", m.Name}
		if m.Declared {
			from, path = "declared in memory_gb", pools.Path{"model", m.Name, "memory_gb"}
		}
		diags = append(diags, pools.Diagnostic{Severity: pools.Warning, Code: "memory-above-assumed", Path: path,
			Message: fmt.Sprintf("lane %q on node %q holds %s resident (pid %d), more than %d%% above the %s assumed for its model %q (%s): the budgets and the guard count that figure, so a later load on %q may be refused or aborted; raise memory_gb or lower the context",
				l.Name, l.Node, pools.Bytes(l.Observed.ResidentBytes), l.Observed.PID, int(tolerance*100+0.5), gbBytes(m.MemoryGB), m.Name, from, l.Node)})
	}
	return diags
}

// gbBytes formats a memory figure in GB as pools.Bytes does, so that it
// reads beside an observed one ("1 MB" rather than "0 GB").
func gbBytes(gb float64) string { return pools.Bytes(int64(gb * 1e9)) }

// observedMemory is ObservedMemory at validate's tolerance, with the
// findings placed in the pool file.
func (c *Common) observedMemory(f pools.Fleet) pools.Diagnostics {
	diags := ObservedMemory(c.Config.Pool, f, compiler.MemoryTolerance)
	c.Config.Sources.Attach(diags)
	return diags
}
