package plan

import (
	"slices"
	"strings"
	"testing"

	"poolc.dev/poolc/pools"
)

// TestAResumedMoveDrainsTheOldPlaceAfterTheRoute plans from the fleet a
// route step leaves when it is killed between readying the lane's new
// place and retiring the old: lane chat runs on a and on b, and the
// gateway reports alias ask on chat at no node (ready at both places).
// The plan must still move ask before it drains and stops chat on a, and
// say why without an empty node name.
func TestAResumedMoveDrainsTheOldPlaceAfterTheRoute(t *testing.T) {
	pool := upgradePool(128, pools.Model{})
	pool.Nodes = append(pool.Nodes, pools.Node{Name: "b", MemoryGB: 128, Guard: pools.Guard{Ceiling: 0.9, ReserveGB: 8}})
	cur := applied(t, pools.Fleet{}, diff(t, pool, pools.Fleet{}))
	pool.Lanes[0].Placement = []string{"b"}
	for _, l := range cur.Lanes {
		if l.Name == "chat" {
			l.Node = "b"
			cur.Lanes = append(cur.Lanes, l)
			cur.Prefetched = append(cur.Prefetched, pools.Prefetch{Node: "b", Model: l.Model, Path: l.Path})
			break
		}
	}
	for i := range cur.Routes {
		if cur.Routes[i].Alias == "ask" {
			cur.Routes[i].Node, cur.Routes[i].Port = "", 0
		}
	}
	p := diff(t, pool, cur)
	deps := map[string][]string{}
	for _, s := range p.Steps {
		deps[s.ID] = s.DependsOn
	}
	var after func(id, want string) bool
	after = func(id, want string) bool {
		return slices.ContainsFunc(deps[id], func(d string) bool { return d == want || after(d, want) })
	}
	route := routeID("ask")
	if _, ok := deps[route]; !ok {
		t.Fatalf("no route step for ask: %v", ids(p))
	}
	for _, s := range p.Steps {
		if s.ID == route && strings.Contains(s.Reason, "from  to") {
			t.Errorf("the route's reason names an empty node: %q", s.Reason)
		}
	}
	found := 0
	for _, s := range p.Steps {
		if (s.Kind == pools.StepDrain || s.Kind == pools.StepStop) && s.Target == "chat" && s.Node == "a" {
			found++
			if !after(s.ID, route) {
				t.Errorf("%s does not wait for %s (depends on %v)", s.ID, route, s.DependsOn)
			}
		}
	}
	if found != 2 {
		t.Errorf("want a drain and a stop of chat on a, plan: %v", ids(p))
	}
}
