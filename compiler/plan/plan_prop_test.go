package plan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/pools"
)

// genPool draws a small random pool: nodes, models, lanes with random
// placements and residencies, aliases with fallbacks, and maybe a profile
// that cordons nodes and overrides lanes.
func genPool(t *rapid.T, label string) *pools.Pool {
	p := &pools.Pool{Name: "prop"}
	nodes := rapid.IntRange(1, 5).Draw(t, label+"nodes")
	for i := range nodes {
		p.Nodes = append(p.Nodes, pools.Node{
			Name: fmt.Sprintf("n%d", i), Address: fmt.Sprintf("n%d.lan", i),
			MemoryGB: float64(rapid.SampledFrom([]int{32, 64, 128, 192}).Draw(t, label+"mem")),
			Guard:    pools.Guard{Ceiling: 0.9, ReserveGB: 8},
		})
	}
	models := rapid.IntRange(1, 4).Draw(t, label+"models")
	for i := range models {
		p.Models = append(p.Models, pools.Model{
			Name: fmt.Sprintf("m%d", i), Path: fmt.Sprintf("/m%d.gguf", i),
			SHA256:   weightsDigest(rapid.IntRange(0, 2).Draw(t, label+"sha")),
			SizeGB:   float64(rapid.IntRange(1, 30).Draw(t, label+"size")),
			MemoryGB: float64(rapid.IntRange(2, 70).Draw(t, label+"memory")),
		})
	}
	lanes := rapid.IntRange(0, 8).Draw(t, label+"lanes")
	residencies := []pools.Residency{pools.KeepWarm, pools.Preferred, pools.OnDemand}
	for i := range lanes {
		perm := rapid.Permutation(nodeNames(p)).Draw(t, label+"placement")
		p.Lanes = append(p.Lanes, pools.Lane{
			Name:      fmt.Sprintf("l%d", i),
			Model:     fmt.Sprintf("m%d", rapid.IntRange(0, models-1).Draw(t, label+"model")),
			Residency: rapid.SampledFrom(residencies).Draw(t, label+"residency"),
			Placement: perm[:rapid.IntRange(1, len(perm)).Draw(t, label+"candidates")],
			Port:      8000 + 10*i + rapid.IntRange(0, 3).Draw(t, label+"port"), // unique, as validation wants
		})
	}
	for i, l := range p.Lanes {
		if !rapid.Bool().Draw(t, label+"aliased") {
			continue
		}
		a := pools.Alias{Name: fmt.Sprintf("a%d", i), Lane: l.Name}
		for _, other := range p.Lanes {
			if other.Name != l.Name && rapid.IntRange(0, 3).Draw(t, label+"fallback") == 0 {
				a.Fallbacks = append(a.Fallbacks, other.Name)
			}
		}
		if rapid.Bool().Draw(t, label+"cloud") {
			a.Fallbacks = append(a.Fallbacks, pools.Cloud)
		}
		p.Aliases = append(p.Aliases, a)
	}
	if rapid.Bool().Draw(t, label+"profiled") {
		pr := pools.Profile{Name: "p"}
		for _, n := range p.Nodes {
			if rapid.IntRange(0, 3).Draw(t, label+"cordon") == 0 {
				pr.Cordon = append(pr.Cordon, n.Name)
			}
		}
		for _, l := range p.Lanes {
			if rapid.IntRange(0, 3).Draw(t, label+"override") == 0 {
				pr.Lanes = append(pr.Lanes, pools.LaneOverride{Lane: l.Name, Residency: rapid.SampledFrom(residencies).Draw(t, label+"res2")})
			}
		}
		p.Profiles = []pools.Profile{pr}
		p.ActiveProfile = "p"
	}
	return p
}

func nodeNames(p *pools.Pool) []string {
	out := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		out[i] = n.Name
	}
	return out
}

// weightsDigest is a made-up sha256 of weights version v ("" for v 0: a model
// that declares none).
func weightsDigest(v int) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("%064x", v)
}

// genChange draws the config after a change: lanes moved, added or
// dropped, residencies changed, models upgraded under the same name (a
// new sha256, path or source), a profile switched.
func genChange(t *rapid.T, old *pools.Pool) *pools.Pool {
	p := *old
	p.Lanes = slices.Clone(old.Lanes)
	p.Models = slices.Clone(old.Models)
	for i := range p.Models {
		m := &p.Models[i]
		switch rapid.IntRange(0, 5).Draw(t, "upgrade") {
		case 0:
			m.SHA256 = weightsDigest(rapid.IntRange(0, 3).Draw(t, "newsha"))
		case 1:
			m.Path = fmt.Sprintf("/v2/m%d.gguf", i)
		case 2:
			m.Source = fmt.Sprintf("https://weights.example/m%d-v%d.gguf", i, rapid.IntRange(1, 2).Draw(t, "newsource"))
		}
	}
	residencies := []pools.Residency{pools.KeepWarm, pools.Preferred, pools.OnDemand}
	var kept []pools.Lane
	for _, l := range p.Lanes {
		switch rapid.IntRange(0, 9).Draw(t, "change") {
		case 0:
			continue // dropped
		case 1:
			perm := rapid.Permutation(nodeNames(&p)).Draw(t, "newplacement")
			l.Placement = perm[:rapid.IntRange(1, len(perm)).Draw(t, "newcandidates")]
		case 2:
			l.Residency = rapid.SampledFrom(residencies).Draw(t, "newresidency")
		case 3:
			l.Port += 5
		case 4:
			l.Model = p.Models[rapid.IntRange(0, len(p.Models)-1).Draw(t, "newmodel")].Name
		}
		kept = append(kept, l)
	}
	if rapid.Bool().Draw(t, "addlane") {
		kept = append(kept, pools.Lane{Name: "new", Model: p.Models[0].Name, Residency: pools.KeepWarm, Placement: nodeNames(&p), Port: 9000})
	}
	p.Lanes = kept
	var aliases []pools.Alias
	for _, a := range p.Aliases {
		if p.Lane(a.Lane) == nil {
			continue
		}
		var fb []string
		for _, f := range a.Fallbacks {
			if f == pools.Cloud || p.Lane(f) != nil {
				fb = append(fb, f)
			}
		}
		a.Fallbacks = fb
		aliases = append(aliases, a)
	}
	p.Aliases = aliases
	if rapid.IntRange(0, 3).Draw(t, "profileswitch") == 0 {
		p.ActiveProfile, p.Profiles = "", nil
	}
	return &p
}

type scenario struct {
	pool    *pools.Pool
	current pools.Fleet
	in      Input
	plan    *pools.Plan
}

// genScenario draws a current fleet (a placed old config, with some nodes
// down) and a plan to a changed config.
func genScenario(t *rapid.T) scenario {
	old := genPool(t, "")
	down := map[string]bool{}
	for _, n := range old.Nodes {
		if rapid.IntRange(0, 5).Draw(t, "down") == 0 {
			down[n.Name] = true
		}
	}
	current := place.Place(place.Input{Pool: old}).Desired
	for i := range current.Nodes {
		current.Nodes[i].Down = down[current.Nodes[i].Name]
	}
	// Some on-demand lanes are loaded by traffic; some weights were never fetched.
	for i := range current.Lanes {
		if current.Lanes[i].Residency == pools.OnDemand && rapid.Bool().Draw(t, "odloaded") {
			current.Lanes[i].Loaded = true
		}
	}
	if len(current.Prefetched) > 0 && rapid.Bool().Draw(t, "forget") {
		current.Prefetched = current.Prefetched[1:]
	}
	sort := current.Clone()
	next := genChange(t, old)
	in := Input{Pool: next, Placement: place.Place(place.Input{Pool: next, Down: down}), Current: sort, Now: time.Unix(1700000000, 0)}
	p, err := Diff(in)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	return scenario{pool: next, current: sort, in: in, plan: p}
}

// order returns a topological order of the plan's steps, choosing among
// ready steps with pick.
func order(p *pools.Plan, pick func(ready []pools.Step) int) []pools.Step {
	done := map[string]bool{}
	var out []pools.Step
	for len(out) < len(p.Steps) {
		var ready []pools.Step
		for _, s := range p.Steps {
			if done[s.ID] {
				continue
			}
			ok := true
			for _, d := range s.DependsOn {
				ok = ok && done[d]
			}
			if ok {
				ready = append(ready, s)
			}
		}
		s := ready[pick(ready)]
		done[s.ID] = true
		out = append(out, s)
	}
	return out
}

// adversarial picks steps that add memory first and steps that free it
// last: the order most likely to pass a budget.
func adversarial(ready []pools.Step) int {
	best := 0
	for i, s := range ready {
		if s.Estimate.MemoryGB > ready[best].Estimate.MemoryGB {
			best = i
		}
	}
	return best
}

func orders(t *rapid.T, p *pools.Plan) [][]pools.Step {
	out := [][]pools.Step{order(p, adversarial), order(p, func([]pools.Step) int { return 0 })}
	r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
	for range 8 {
		out = append(out, order(p, func(ready []pools.Step) int { return r.IntN(len(ready)) }))
	}
	return out
}

// Property 1: no order a runner may pick passes a node's budget.
func TestEveryOrderKeepsEveryNodeWithinBudget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t)
		for _, steps := range orders(t, sc.plan) {
			f := sc.current.Clone()
			check := func(after string) {
				use := map[string]float64{}
				for _, l := range f.Lanes {
					use[l.Node] += l.Reserved()
				}
				for _, n := range sc.pool.Nodes {
					if sc.in.Placement.Desired.IsDown(n.Name) {
						continue
					}
					if use[n.Name] > n.Budget()+1e-6 {
						t.Fatalf("after %s node %s holds %v GB, budget %v\nplan:\n%s", after, n.Name, use[n.Name], n.Budget(), dump(sc.plan))
					}
				}
			}
			check("nothing")
			for _, s := range steps {
				if err := f.Apply(s); err != nil {
					t.Fatal(err)
				}
				check(s.ID)
			}
		}
	})
}

// Property 2: applying the plan gives the desired fleet, and planning
// again gives an empty plan.
func TestApplyingThePlanReachesTheDesiredFleetAndReplanningIsEmpty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t)
		f := sc.current.Clone()
		for _, s := range order(sc.plan, func(r []pools.Step) int { return len(r) - 1 }) {
			if err := f.Apply(s); err != nil {
				t.Fatal(err)
			}
		}
		f.Nodes = sc.in.Placement.Desired.Nodes
		want := settled(sc.pool, sc.in.Placement.Desired, f)
		f.Routes = routedPorts(f)
		if !sameLanes(f, want) || !slices.Equal(f.Routes, want.Routes) || !slices.Equal(f.Members, want.Members) {
			t.Fatalf("after the plan:\n%+v\nwant:\n%+v\nplan:\n%s", f.Lanes, want.Lanes, dump(sc.plan))
		}
		for _, l := range f.Lanes {
			if !f.HasPrefetched(pools.Prefetch{Node: l.Node, Model: l.Model, Path: l.Path, SHA256: l.SHA256}) {
				t.Fatalf("weights %s of %s not on %s after the plan\nplan:\n%s", l.Path, l.Model, l.Node, dump(sc.plan))
			}
		}
		in := sc.in
		in.Current = f
		again, err := Diff(in)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Empty() {
			t.Fatalf("planning again gives:\n%s\nfirst:\n%s\nafter: %+v\nsteps %+v", dump(again), dump(sc.plan), f.Lanes, sc.plan.Steps)
		}
	})
}

// settled is the desired fleet as the fleet f after a plan may run it: a
// lane replaced on its node on its spare port, from its staged weights
// file, and routes naming the port of the process they reach.
func settled(pool *pools.Pool, desired, f pools.Fleet) pools.Fleet {
	want := desired.Clone()
	spare := pool.SparePorts(&desired)
	for i := range want.Lanes {
		d := &want.Lanes[i]
		for _, l := range f.Instances(d.Name) {
			if l.Node == d.Node && (l.Port == spare[d.Name] || l.Port == d.Port) && (l.Path == pools.StagedPath(*d) || l.Path == d.Path) {
				d.Port, d.Path = l.Port, l.Path
				// A digest or source one side does not know is no change.
				if l.SHA256 == "" || d.SHA256 == "" {
					d.SHA256 = l.SHA256
				}
				if l.Source == "" || d.Source == "" {
					d.Source = l.Source
				}
			}
		}
	}
	want.Routes = routedPorts(want)
	return want
}

// routedPorts is f's routes, each naming the port of the process it reaches.
func routedPorts(f pools.Fleet) []pools.Route {
	out := slices.Clone(f.Routes)
	for i := range out {
		if l := f.Serves(out[i]); l != nil {
			out[i].Port = l.Port
		}
	}
	return out
}

// sameLanes compares lanes, ignoring whether on-demand lanes happen to be
// loaded: admission, not the plan, decides that.
func sameLanes(a, b pools.Fleet) bool {
	if len(a.Lanes) != len(b.Lanes) {
		return false
	}
	for i := range a.Lanes {
		x, y := a.Lanes[i], b.Lanes[i]
		if x.Residency == pools.OnDemand {
			x.Loaded, y.Loaded = false, false
		}
		if x.Name != y.Name || x.Node != y.Node || x.Model != y.Model || x.Path != y.Path || x.Port != y.Port || x.Residency != y.Residency || x.Loaded != y.Loaded || !slices.Equal(x.Args, y.Args) || x.SHA256 != y.SHA256 || x.Source != y.Source {
			return false
		}
	}
	return true
}

// Property 3: an alias served before the plan is served at every point of
// every order (by a running, undrained lane or the cloud), unless the plan
// reports its interruption.
func TestNoAliasGoesUnservedUnlessReported(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t)
		reported := map[string]bool{}
		for _, in := range sc.plan.Interruptions {
			reported[in.Alias] = true
		}
		for _, steps := range orders(t, sc.plan) {
			f := sc.current.Clone()
			drained := map[process]bool{}
			// reach is the residency of the process each alias reaches:
			// the gateway sends a route to an on-demand lane to its
			// node's router, to another lane to its own process.
			reach := map[string]pools.Residency{}
			for _, r := range f.Routes {
				if l := f.Serves(r); l != nil {
					reach[r.Alias] = l.Residency
				}
			}
			served := func(alias string) bool {
				r := f.Route(alias)
				if r == nil {
					return false
				}
				if r.Lane == pools.Cloud {
					return true
				}
				l := f.ProcessAs(pools.LaneState{Name: r.Lane, Node: r.Node, Port: r.Port, Residency: reach[alias]})
				if l == nil && r.Port == 0 {
					l = f.Serves(*r)
				}
				return l != nil && !drained[processOf(*l)] && !f.IsDown(r.Node)
			}
			var watch []string
			for _, r := range sc.current.Routes {
				// A lane's server route is no alias: its lane is one.
				if _, server := pools.LaneServerOf(r.Alias); server {
					continue
				}
				if served(r.Alias) && sc.in.Placement.Desired.Route(r.Alias) != nil && !reported[r.Alias] {
					watch = append(watch, r.Alias)
				}
			}
			for _, s := range steps {
				switch s.Kind {
				case pools.StepDrain:
					drained[processOf(*s.Lane)] = true
				case pools.StepStart: // a new process in place of the old
					delete(drained, processOf(*s.Lane))
				case pools.StepRoute:
					if l := sc.in.Placement.Desired.Lane(s.Route.Lane, s.Route.Node); l != nil {
						reach[s.Route.Alias] = l.Residency
					}
				}
				if err := f.Apply(s); err != nil {
					t.Fatal(err)
				}
				for _, a := range watch {
					if !served(a) {
						t.Fatalf("alias %s unserved after %s, not reported\nplan:\n%s", a, s.ID, dump(sc.plan))
					}
				}
			}
		}
	})
}

// Property 5: in every order, no prefetch writes a weights file a running
// process loads with other weights (llama-server maps its file: the
// process would serve a mix), and no two processes on a node listen on
// one port.
func TestNoStepOverwritesLoadedWeightsOrSharesAPort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t)
		for _, steps := range orders(t, sc.plan) {
			f := sc.current.Clone()
			for _, s := range steps {
				if s.Kind == pools.StepPrefetch {
					for _, l := range f.Lanes {
						if l.Node == s.Prefetch.Node && l.Path == s.Prefetch.Path && !pools.SameWeights(l, pools.LaneState{SHA256: s.Prefetch.SHA256}) {
							t.Fatalf("%s writes %s while lane %s on port %d loads it (sha256 %q, the step copies %q)\nplan:\n%s",
								s.ID, s.Prefetch.Path, l.Name, l.Port, l.SHA256, s.Prefetch.SHA256, dump(sc.plan))
						}
					}
				}
				if err := f.Apply(s); err != nil {
					t.Fatal(err)
				}
				ports := map[[2]string]string{}
				for _, l := range f.Lanes {
					if l.Residency == pools.OnDemand {
						continue // served by the node's router, not on its port
					}
					key := [2]string{l.Node, fmt.Sprint(l.Port)}
					if other, ok := ports[key]; ok {
						t.Fatalf("after %s lanes %s and %s both listen on %s port %d\nplan:\n%s", s.ID, other, l.Name, l.Node, l.Port, dump(sc.plan))
					}
					ports[key] = l.Name
				}
			}
		}
	})
}

// Property 4: the same inputs give a byte-identical plan, however the
// current fleet's lists are ordered.
func TestSameInputsGiveTheSamePlan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sc := genScenario(t)
		in := sc.in
		shuffled := sc.current.Clone()
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "shuffle"), 2))
		r.Shuffle(len(shuffled.Lanes), func(i, j int) { shuffled.Lanes[i], shuffled.Lanes[j] = shuffled.Lanes[j], shuffled.Lanes[i] })
		r.Shuffle(len(shuffled.Routes), func(i, j int) { shuffled.Routes[i], shuffled.Routes[j] = shuffled.Routes[j], shuffled.Routes[i] })
		in.Current = shuffled
		again, err := Diff(in)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(sc.plan)
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Fatalf("plans differ:\n%s\n%s", a, b)
		}
	})
}

func dump(p *pools.Plan) string {
	out := ""
	for _, s := range p.Steps {
		out += fmt.Sprintf("  %s %v mem=%v\n", s.ID, s.DependsOn, s.Estimate.MemoryGB)
	}
	return out + "  " + p.Summary()
}
