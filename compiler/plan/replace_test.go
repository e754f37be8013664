package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/pools"
)

const (
	oldSHA = "1111111111111111111111111111111111111111111111111111111111111111"
	newSHA = "2222222222222222222222222222222222222222222222222222222222222222"
)

// upgradePool is one node serving lane chat (model qwen, 30 GB) on port
// 8080 for alias ask, beside lane embed (8 GB, port 8081); memGB sizes the
// node.
func upgradePool(memGB float64, qwen pools.Model) *pools.Pool {
	qwen.Name, qwen.SizeGB, qwen.MemoryGB = "qwen", 10, 30
	if qwen.Path == "" {
		qwen.Path = "/models/qwen.gguf"
	}
	return &pools.Pool{
		Name:   "lab",
		Nodes:  []pools.Node{{Name: "a", MemoryGB: memGB, Guard: pools.Guard{Ceiling: 0.9, ReserveGB: 8}}},
		Models: []pools.Model{{Name: "embed", Path: "/models/embed.gguf", SizeGB: 2, MemoryGB: 8}, qwen}, // sorted by name
		Lanes: []pools.Lane{
			{Name: "chat", Model: "qwen", Residency: pools.KeepWarm, Placement: []string{"a"}, Port: 8080},
			{Name: "embed", Model: "embed", Residency: pools.KeepWarm, Placement: []string{"a"}, Port: 8081},
		},
		Aliases: []pools.Alias{{Name: "ask", Lane: "chat"}, {Name: "vec", Lane: "embed"}},
	}
}

// applied is the fleet after every step of the plan, in its order.
func applied(t *testing.T, cur pools.Fleet, p *pools.Plan) pools.Fleet {
	t.Helper()
	f := cur.Clone()
	for _, s := range p.Steps {
		if err := f.Apply(s); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func diff(t *testing.T, pool *pools.Pool, cur pools.Fleet) *pools.Plan {
	t.Helper()
	p, err := Diff(Input{Pool: pool, Placement: place.Place(place.Input{Pool: pool}), Current: cur, Now: time.Unix(1767225600, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ids(p *pools.Plan) []string {
	out := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = s.ID
	}
	return out
}

// TestAModelUpgradeUnderTheSameNameIsReplacedMakeBeforeBreak walks model
// qwen's upgrades: each plan, its order, the paths and ports it uses, and
// that planning after it is empty.
func TestAModelUpgradeUnderTheSameNameIsReplacedMakeBeforeBreak(t *testing.T) {
	type want struct {
		steps []string
		deps  map[string][]string
		// path the prefetch writes, port the new process listens on
		path string
		port int
		// reason holds this text in the start step's reason
		reason        string
		interruptions int
	}
	cases := []struct {
		name     string
		memGB    float64
		from, to pools.Model
		want     want
	}{{
		name: "new sha256, same path, room for both", memGB: 128,
		from: pools.Model{SHA256: oldSHA}, to: pools.Model{SHA256: newSHA},
		want: want{
			steps: []string{"prefetch:qwen@a", "start:chat@a:8082", "route:ask", "drain:chat@a", "stop:chat@a"},
			deps: map[string][]string{
				"start:chat@a:8082": {"prefetch:qwen@a"}, "route:ask": {"start:chat@a:8082"},
				"drain:chat@a": {"route:ask", "start:chat@a:8082"}, "stop:chat@a": {"drain:chat@a"},
			},
			path: "/models/qwen.sha-222222222222.gguf", port: 8082,
			reason: "because lane chat on a is replaced: model qwen sha256 111111111111 → 222222222222",
		},
	}, {
		name: "staged weights go back to the model's path on the next upgrade", memGB: 128,
		from: pools.Model{SHA256: newSHA, Path: "/models/qwen.sha-222222222222.gguf"}, to: pools.Model{SHA256: oldSHA},
		want: want{
			steps: []string{"prefetch:qwen@a", "start:chat@a:8082", "route:ask", "drain:chat@a", "stop:chat@a"},
			path:  "/models/qwen.gguf", port: 8082,
			// The staged file is the model's own: the reason names the digest only.
			reason: "replaced: model qwen sha256 222222222222 → 111111111111; the new",
		},
	}, {
		name: "new source, no sha256", memGB: 128,
		from: pools.Model{Source: "nas:/v1/qwen.gguf"}, to: pools.Model{Source: "nas:/v2/qwen.gguf"},
		want: want{
			steps:  []string{"prefetch:qwen@a", "start:chat@a:8082", "route:ask", "drain:chat@a", "stop:chat@a"},
			path:   pools.StagedPath(pools.LaneState{Path: "/models/qwen.gguf", Source: "nas:/v2/qwen.gguf"}),
			port:   8082,
			reason: "model qwen source nas:/v1/qwen.gguf → nas:/v2/qwen.gguf",
		},
	}, {
		name: "new path", memGB: 128,
		from: pools.Model{SHA256: oldSHA}, to: pools.Model{SHA256: oldSHA, Path: "/models/v2/qwen.gguf"},
		want: want{
			steps: []string{"prefetch:qwen@a", "start:chat@a:8082", "route:ask", "drain:chat@a", "stop:chat@a"},
			path:  "/models/v2/qwen.gguf", port: 8082,
			reason: "weights /models/qwen.gguf → /models/v2/qwen.gguf",
		},
	}, {
		name: "new args need no weights", memGB: 128,
		from: pools.Model{SHA256: oldSHA}, to: pools.Model{SHA256: oldSHA, Args: []string{"--ctx-size", "65536"}},
		want: want{
			steps: []string{"start:chat@a:8082", "route:ask", "drain:chat@a", "stop:chat@a"},
			port:  8082, reason: "args [] → [--ctx-size 65536]",
		},
	}, {
		// 64 GB: budget 56 GB holds chat (30) and embed (8), not a second chat.
		name: "no room for both: the old process stops first, reported", memGB: 64,
		from: pools.Model{SHA256: oldSHA}, to: pools.Model{SHA256: newSHA},
		want: want{
			// The alias is taken off the gateway first: a drain under load
			// with requests still arriving never ends.
			steps: []string{"prefetch:qwen@a", "route:ask~interim", "drain:chat@a", "stop:chat@a", "start:chat@a:8082", "route:ask"},
			deps: map[string][]string{
				"drain:chat@a": {"prefetch:qwen@a", "route:ask~interim"}, "start:chat@a:8082": {"prefetch:qwen@a", "stop:chat@a"},
				"route:ask": {"route:ask~interim", "start:chat@a:8082"},
			},
			path: "/models/qwen.sha-222222222222.gguf", port: 8082, interruptions: 1,
			reason: "sha256 111111111111 → 222222222222; the new process starts on port 8082 once the old one has stopped",
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := upgradePool(c.memGB, c.from)
			cur := place.Place(place.Input{Pool: old}).Desired
			if p := diff(t, old, cur); !p.Empty() {
				t.Fatalf("the old pool's own fleet plans %v", ids(p))
			}
			pool := upgradePool(c.memGB, c.to)
			p := diff(t, pool, cur)
			if got := ids(p); !slices.Equal(got, c.want.steps) {
				t.Fatalf("steps %v, want %v", got, c.want.steps)
			}
			for id, deps := range c.want.deps {
				if got := p.Step(id).DependsOn; !slices.Equal(got, deps) {
					t.Errorf("%s depends on %v, want %v", id, got, deps)
				}
			}
			start := p.Step("start:chat@a:8082")
			if start.Lane.Port != c.want.port || !strings.Contains(start.Reason, c.want.reason) {
				t.Errorf("start %+v: %s; want port %d and reason with %q", *start.Lane, start.Reason, c.want.port, c.want.reason)
			}
			if start.Lane.SHA256 != c.to.SHA256 || start.Lane.Source != c.to.Source {
				t.Errorf("start carries sha256 %q source %q, want %q %q", start.Lane.SHA256, start.Lane.Source, c.to.SHA256, c.to.Source)
			}
			if pf := p.Step("prefetch:qwen@a"); pf != nil {
				if pf.Prefetch.Path != c.want.path || pf.Prefetch.SHA256 != c.to.SHA256 || start.Lane.Path != c.want.path {
					t.Errorf("prefetch writes %s (sha256 %q), start loads %s; want %s", pf.Prefetch.Path, pf.Prefetch.SHA256, start.Lane.Path, c.want.path)
				}
			}
			if r := p.Step("route:ask").Route; r.Port != c.want.port || r.Node != "a" {
				t.Errorf("route goes to %+v, want port %d", *r, c.want.port)
			}
			if len(p.Interruptions) != c.want.interruptions {
				t.Errorf("interruptions %+v, want %d", p.Interruptions, c.want.interruptions)
			}
			if p.Step("drain:embed@a") != nil || p.Step("route:vec") != nil {
				t.Errorf("lane embed is touched: %v", ids(p))
			}
			after := applied(t, cur, p)
			if again := diff(t, pool, after); !again.Empty() {
				t.Fatalf("planning after the plan gives %v", ids(again))
			}
		})
	}
}

// TestNoRoomForBothSaysWhyInTheInterruption checks the reason names the
// budget, and that an interim takes the alias when a lane of the model
// stays up elsewhere.
func TestNoRoomForBothSaysWhyInTheInterruption(t *testing.T) {
	old := upgradePool(64, pools.Model{SHA256: oldSHA})
	cur := place.Place(place.Input{Pool: old}).Desired
	p := diff(t, upgradePool(64, pools.Model{SHA256: newSHA}), cur)
	if len(p.Interruptions) != 1 {
		t.Fatalf("interruptions %+v", p.Interruptions)
	}
	want := "lane chat is replaced on a but its old process must stop before the new one can start (a has a budget 56 GB (64 GB - 8 GB reserve) and holds 38 GB; the new process needs 30 GB more)"
	if in := p.Interruptions[0]; in.Alias != "ask" || !strings.Contains(in.Reason, want) {
		t.Fatalf("interruption %+v, want reason with %q", in, want)
	}

	fb := upgradePool(64, pools.Model{SHA256: newSHA})
	fb.Aliases[0].Fallbacks = []string{pools.Cloud}
	p = diff(t, fb, cur)
	if len(p.Interruptions) != 0 || p.Step("route:ask~interim") == nil {
		t.Fatalf("with a cloud fallback: steps %v, interruptions %+v", ids(p), p.Interruptions)
	}
	if deps := p.Step("drain:chat@a").DependsOn; !slices.Contains(deps, "route:ask~interim") {
		t.Fatalf("drain waits for %v, want the interim route", deps)
	}
}

// TestStatesWithoutDigestsOrRoutePortsPlanNothing: a state written before
// lanes recorded sha256 and source and routes their port is read as
// running what the pool declares.
func TestStatesWithoutDigestsOrRoutePortsPlanNothing(t *testing.T) {
	pool := upgradePool(128, pools.Model{SHA256: newSHA, Source: "nas:/qwen.gguf"})
	cur := place.Place(place.Input{Pool: pool}).Desired
	for i := range cur.Lanes {
		cur.Lanes[i].SHA256, cur.Lanes[i].Source = "", ""
	}
	for i := range cur.Prefetched {
		cur.Prefetched[i].SHA256 = ""
	}
	for i := range cur.Routes {
		cur.Routes[i].Port = 0
	}
	if p := diff(t, pool, cur); !p.Empty() {
		t.Fatalf("plans %v", ids(p))
	}
}

// TestAnOnDemandUpgradeIsInPlaceAndReportedAsAnInterruption: an
// on-demand lane is one section of its node's router, which holds one
// section per lane, so new weights replace it in place on the lane's
// port after the old section stops, and with no interim the plan reports
// the interruption, with the alias off the gateway while the lane drains
// (else requests keep arriving and the drain never ends) and back once it
// has started; a fallback that the router serves is no interim (its
// section does not answer to the alias), one with a process of its own is.
func TestAnOnDemandUpgradeIsInPlaceAndReportedAsAnInterruption(t *testing.T) {
	onDemand := func(sha string, fallback pools.Residency) *pools.Pool {
		p := upgradePool(128, pools.Model{SHA256: sha})
		p.Lanes[0].Residency = pools.OnDemand
		p.Lanes[1].Residency = fallback
		p.Aliases[0].Fallbacks = []string{"embed"}
		return p
	}
	for _, fallback := range []pools.Residency{pools.OnDemand, pools.KeepWarm} {
		cur := place.Place(place.Input{Pool: onDemand(oldSHA, fallback)}).Desired
		p := diff(t, onDemand(newSHA, fallback), cur)
		start := p.Step("start:chat@a")
		if start == nil || start.Lane.Port != 8080 || !slices.Contains(start.DependsOn, "stop:chat@a") {
			t.Fatalf("fallback %s: steps %v, want start:chat@a on port 8080 after stop:chat@a", fallback, ids(p))
		}
		switch interim := p.Step("route:ask~interim"); fallback {
		case pools.OnDemand:
			if interim == nil || interim.Route.Lane != "" || len(p.Interruptions) != 1 || p.Interruptions[0].Alias != "ask" {
				t.Fatalf("fallback in the router: steps %v, interruptions %+v; want ask's interruption, ask off the gateway meanwhile", ids(p), p.Interruptions)
			}
			drain, back := p.Step("drain:chat@a"), p.Step("route:ask")
			if !slices.Contains(drain.DependsOn, interim.ID) || back == nil || !slices.Contains(back.DependsOn, "start:chat@a") || back.Route.Lane != "chat" {
				t.Fatalf("fallback in the router: drain after %v, route back %+v; want the drain after ask is off the gateway, ask back on chat after the start", drain.DependsOn, back)
			}
		default:
			if interim == nil || len(p.Interruptions) != 0 {
				t.Fatalf("fallback with its own process: steps %v, interruptions %+v; want an interim route", ids(p), p.Interruptions)
			}
		}
		after := applied(t, cur, p)
		if again := diff(t, onDemand(newSHA, fallback), after); len(again.Steps) != 0 {
			t.Fatalf("fallback %s: planning after the plan: %v", fallback, ids(again))
		}
	}
}

// TestASparePortIsFreeOnItsNode: a lane replaced on its node starts its
// second process on the port above its own when only a lane of another
// node declares that port (spare ports belong to a node), and planning
// again after the plan is empty.
func TestASparePortIsFreeOnItsNode(t *testing.T) {
	twoNodes := func(sha string) *pools.Pool {
		p := upgradePool(128, pools.Model{SHA256: sha})
		p.Nodes = append(p.Nodes, pools.Node{Name: "b", MemoryGB: 128, Guard: p.Nodes[0].Guard})
		p.Lanes[1].Placement = []string{"b"} // embed declares 8081, on b
		return p
	}
	cur := place.Place(place.Input{Pool: twoNodes(oldSHA)}).Desired
	pool := twoNodes(newSHA)
	p := diff(t, pool, cur)
	start := p.Step("start:chat@a:8081")
	if start == nil || start.Lane.Port != 8081 {
		t.Fatalf("steps %v, want start:chat@a:8081", ids(p))
	}
	if again := diff(t, pool, applied(t, cur, p)); !again.Empty() {
		t.Fatalf("planning again gives %v", ids(again))
	}
}
