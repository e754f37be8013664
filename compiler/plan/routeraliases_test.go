package plan

import (
	"slices"
	"testing"

	"poolc.dev/poolc/pools"
)

// TestAnAliasAddedToAnOnDemandLaneChangesItsRouterSection: the node's
// router answers to the names of the lane's section alone, so a new alias
// replaces the section (start after stop), and the new alias's route
// waits for it. Before, the plan only routed the alias to the router,
// which answered 400 "model not found" (fleet walk seeds 5 and 6).
func TestAnAliasAddedToAnOnDemandLaneChangesItsRouterSection(t *testing.T) {
	pool := upgradePool(128, pools.Model{})
	pool.Lanes[1].Residency = pools.OnDemand
	cur := applied(t, pools.Fleet{}, diff(t, pool, pools.Fleet{}))
	if p := diff(t, pool, cur); len(p.Steps) != 0 {
		t.Fatalf("planning again: %v, want nothing", ids(p))
	}
	pool.Aliases = append(pool.Aliases, pools.Alias{Name: "vec2", Lane: "embed"})
	p := diff(t, pool, cur)
	var start, route *pools.Step
	for i := range p.Steps {
		switch p.Steps[i].ID {
		case "start:embed@a":
			start = &p.Steps[i]
		case "route:vec2":
			route = &p.Steps[i]
		}
	}
	if start == nil || route == nil || !slices.Contains(route.DependsOn, start.ID) {
		t.Fatalf("plan %v: want start:embed@a with aliases [vec vec2] and route:vec2 after it", ids(p))
	}
	if !slices.Equal(start.Lane.Aliases, []string{"vec", "vec2"}) {
		t.Fatalf("start:embed@a has router aliases %v, want [vec vec2]", start.Lane.Aliases)
	}
	if again := diff(t, pool, applied(t, cur, p)); len(again.Steps) != 0 {
		t.Fatalf("after the plan: %v, want nothing", ids(again))
	}
}
