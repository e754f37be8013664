package plan

import (
	"slices"
	"testing"

	"poolc.dev/poolc/pools"
)

// fallbackPool is lane chat on node a for alias ask, which falls back to
// lane embed: no alias routes to embed, which runs on node embedOn.
func fallbackPool(embedOn string) *pools.Pool {
	guard := pools.Guard{Ceiling: 0.9, ReserveGB: 8}
	return &pools.Pool{
		Name:   "lab",
		Nodes:  []pools.Node{{Name: "a", MemoryGB: 64, Guard: guard}, {Name: "b", MemoryGB: 64, Guard: guard}},
		Models: []pools.Model{{Name: "embed", Path: "/models/embed.gguf", SizeGB: 2, MemoryGB: 8}, {Name: "qwen", Path: "/models/qwen.gguf", SizeGB: 10, MemoryGB: 30}},
		Lanes: []pools.Lane{
			{Name: "chat", Model: "qwen", Residency: pools.KeepWarm, Placement: []string{"a"}, Port: 8080},
			{Name: "embed", Model: "embed", Residency: pools.Preferred, Placement: []string{embedOn}, Port: 8081},
		},
		Aliases: []pools.Alias{{Name: "ask", Lane: "chat", Fallbacks: []string{"embed"}}},
	}
}

// TestAFallbackLanesServerFollowsTheLane: the gateway holds a server for
// a lane that is only a fallback, so the plan routes that server like an
// alias: to the lane's new place before its old process drains when it
// moves, and away (retired) before it stops when it leaves the pool.
// Before, no route step reached the gateway for such a lane (seed 2 of
// the fleet walk: its server kept the old address; seed 4: a removed
// lane's server stayed ready).
func TestAFallbackLanesServerFollowsTheLane(t *testing.T) {
	key := pools.LaneServer("embed")
	pool := fallbackPool("a")
	cur := applied(t, pools.Fleet{}, diff(t, pool, pools.Fleet{}))
	if r := cur.Route(key); r == nil || r.Lane != "embed" || r.Node != "a" {
		t.Fatalf("first apply: the server of lane embed is routed %+v, want to embed on a", r)
	}
	if p := diff(t, pool, cur); len(p.Steps) != 0 {
		t.Fatalf("planning again: %v, want nothing", ids(p))
	}

	// Moved: the server goes to b before the process on a drains.
	pool = fallbackPool("b")
	p := diff(t, pool, cur)
	s := stepByID(p, "route:"+key)
	if s == nil || s.Route.Node != "b" || s.Route.Lane != "embed" {
		t.Fatalf("move: no route of the server of lane embed to b in %v", ids(p))
	}
	if d := stepByID(p, "drain:embed@a"); d == nil || !slices.Contains(d.DependsOn, s.ID) {
		t.Fatalf("move: drain:embed@a does not wait for %s: %+v", s.ID, d)
	}
	if len(p.Interruptions) != 0 {
		t.Fatalf("move: interruptions %+v, want none", p.Interruptions)
	}
	cur = applied(t, cur, p)
	if p := diff(t, pool, cur); len(p.Steps) != 0 {
		t.Fatalf("after the move: %v, want nothing", ids(p))
	}

	// Removed: the server is retired before the process drains.
	pool.Lanes = pool.Lanes[:1]
	pool.Models = pool.Models[1:]
	pool.Aliases[0].Fallbacks = nil
	p = diff(t, pool, cur)
	s = stepByID(p, "route:"+key)
	if s == nil || s.Route.Lane != "" {
		t.Fatalf("removal: no step retiring the server of lane embed in %v", ids(p))
	}
	if d := stepByID(p, "drain:embed@b"); d == nil || !slices.Contains(d.DependsOn, s.ID) {
		t.Fatalf("removal: drain:embed@b does not wait for %s: %+v", s.ID, d)
	}
	cur = applied(t, cur, p)
	if r := cur.Route(key); r != nil {
		t.Fatalf("after the removal: the server of lane embed is still routed: %+v", r)
	}
}

func stepByID(p *pools.Plan, id string) *pools.Step {
	for i := range p.Steps {
		if p.Steps[i].ID == id {
			return &p.Steps[i]
		}
	}
	return nil
}
