package llama

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"poolc.dev/poolc/plugins/sdk"
)

// TestKeptBoundKeepsARunningRoutersSafeBound: a running router's
// --models-max stays while the models it lets be loaded fit; only an
// unsafe one, or no router, takes the bound the room gives.
func TestKeptBoundKeepsARunningRoutersSafeBound(t *testing.T) {
	for _, c := range []struct {
		k, n, current, want int
	}{
		{k: 3, n: 3, current: -1, want: 0}, // all fit, no router: no bound
		{k: 2, n: 3, current: -1, want: 2},
		{k: 3, n: 3, current: 2, want: 2}, // room grew: the running bound is still safe
		{k: 1, n: 1, current: 1, want: 1}, // a model left
		{k: 2, n: 3, current: 0, want: 2}, // a model came that does not fit beside the rest
		{k: 1, n: 3, current: 2, want: 1}, // room shrank below the running bound
		{k: 3, n: 3, current: 0, want: 0},
		{k: 2, n: 2, current: 5, want: 5}, // a bound above the count loads them all, which fit
		{k: 1, n: 2, current: 5, want: 1},
	} {
		if got := keptBound(c.k, c.n, c.current); got != c.want {
			t.Errorf("keptBound(k=%d, n=%d, current=%d) = %d, want %d", c.k, c.n, c.current, got, c.want)
		}
	}
}

// TestRemovingAnOnDemandLaneKeepsTheRoutersBound: two 30 GB on-demand
// lanes in a 56 GB budget run with --models-max 1; when one stops, the
// other would fit unbounded, but the running bound is still safe, so the
// router takes the change in place (the same process, the same bound)
// instead of restarting, which would cut the other lane's requests.
func TestRemovingAnOnDemandLaneKeepsTheRoutersBound(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	cfg, _ := json.Marshal(map[string]any{"local": true, "llama_server": set.Binary, "state_dir": set.StateDir,
		"listen_host": "127.0.0.1", "env": set.Env, "stop_grace_seconds": 3, "router_port": freePort(t)})
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1", MemoryGB: 64, BudgetGB: 56}
	var inv sdk.Inventory
	inv.Nodes = []sdk.Node{node}
	var lanes []*sdk.Lane
	for _, name := range []string{"vision", "audio"} {
		l := testLane(t, name, 1000, name+"-alias")
		m := sdk.Model{Name: name + "-model", Path: l.Model, SizeGB: 0.000001, MemoryGB: 30}
		inv.Models = append(inv.Models, m)
		inv.Lanes = append(inv.Lanes, sdk.LaneSpec{Name: name, Model: m.Name, Port: l.Port, Aliases: l.Aliases, Residency: sdk.OnDemand})
		lanes = append(lanes, &sdk.Lane{Name: name, Node: node, Model: m, Port: l.Port, Aliases: l.Aliases, Residency: sdk.OnDemand})
	}
	act := NewActuator("test")
	if r := act.Configure(ctx, sdk.ConfigureRequest{Pool: "p", ConfigJSON: cfg, Inventory: inv}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	n, err := act.node(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(kind sdk.StepKind, lane *sdk.Lane) {
		t.Helper()
		if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: string(kind) + ":" + lane.Name, Kind: kind, Lane: lane}}, nil); r.Diagnostics.HasErrors() {
			t.Fatalf("%s %s: %v", kind, lane.Name, r.Diagnostics)
		}
	}
	for _, l := range lanes {
		defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: l}}, nil)
		apply(sdk.KindStart, l)
	}
	router := func() (int, string) {
		t.Helper()
		st, err := n.procs.status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r := st.records[RouterLane]
		if !r.alive {
			t.Fatalf("no router runs: %+v", st.records)
		}
		return r.pid, r.modelsMax()
	}
	pid, bound := router()
	if bound != "1" {
		t.Fatalf("two 30 GB models in 56 GB: --models-max %s, want 1", bound)
	}
	apply(sdk.KindDrain, lanes[1])
	apply(sdk.KindStop, lanes[1])
	if p, b := router(); p != pid || b != "1" {
		t.Errorf("after audio's stop the router is pid %d with --models-max %s; want pid %d, still 1 (no restart)", p, b, pid)
	}
	if served, err := n.RouterServes(ctx); err != nil || len(served) != 1 || served[0].Name != "vision" {
		t.Errorf("the router serves %+v (%v); want vision alone", served, err)
	}
}

// TestAnOnDemandLanesArgsAreObservedFromTheRouter: an on-demand lane's
// arguments go into its router preset section, and observe reads them
// back from the command line the router reports for the model (GET
// /models status.args, long flags, its own order): the same options in
// another spelling are no change, a change of the pool's arguments is
// seen (what runs is reported, so the planner replaces the lane), and
// the start that takes the new arguments makes the router run them.
func TestAnOnDemandLanesArgsAreObservedFromTheRouter(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	cfg, _ := json.Marshal(map[string]any{"local": true, "llama_server": set.Binary, "state_dir": set.StateDir,
		"listen_host": "127.0.0.1", "env": set.Env, "stop_grace_seconds": 3, "router_port": freePort(t)})
	l := testLane(t, "notes", 1000, "notes-alias")
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1", MemoryGB: 64, BudgetGB: 56}
	act := NewActuator("test")
	configure := func(args ...string) sdk.Lane {
		t.Helper()
		m := sdk.Model{Name: "notes-model", Path: l.Model, SizeGB: 0.000001, MemoryGB: 10, Args: args}
		inv := sdk.Inventory{Nodes: []sdk.Node{node}, Models: []sdk.Model{m},
			Lanes: []sdk.LaneSpec{{Name: "notes", Model: m.Name, Port: l.Port, Aliases: l.Aliases, Residency: sdk.OnDemand}}}
		if r := act.Configure(ctx, sdk.ConfigureRequest{Pool: "p", ConfigJSON: cfg, Inventory: inv}); r.Diagnostics.HasErrors() {
			t.Fatal(r.Diagnostics)
		}
		return sdk.Lane{Name: "notes", Node: node, Model: m, Port: l.Port, Aliases: l.Aliases, Residency: sdk.OnDemand}
	}
	start := func(lane sdk.Lane) {
		t.Helper()
		if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "start", Kind: sdk.KindStart, Lane: &lane}}, nil); r.Diagnostics.HasErrors() {
			t.Fatalf("start: %v", r.Diagnostics)
		}
	}
	observed := func() sdk.Lane {
		t.Helper()
		obs := act.Observe(ctx, sdk.ObserveRequest{})
		if len(obs.Fleet.Lanes) != 1 {
			t.Fatalf("observed %+v %v", obs.Fleet.Lanes, obs.Diagnostics)
		}
		return obs.Fleet.Lanes[0]
	}
	lane := configure("--temp", "0.5", "--jinja")
	defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: &lane}}, nil)
	start(lane)
	first := lane
	got := observed()
	if !slices.Equal(got.Model.Args, []string{"--temp", "0.5", "--jinja"}) {
		t.Errorf("observed args %q; want the pool's, which the router runs", got.Model.Args)
	}
	if cl := strings.Join(got.Process.CommandLine, " "); !strings.Contains(cl, "--temp 0.5") || !strings.Contains(cl, "--jinja") {
		t.Errorf("observed command line %q; want the router's for the model, with --temp 0.5 --jinja", cl)
	}
	// The same options spelt otherwise: no change.
	configure("--jinja", "--temp=0.5")
	if got := observed(); !slices.Equal(got.Model.Args, []string{"--jinja", "--temp=0.5"}) {
		t.Errorf("after a respelling, observed args %q; want the pool's (the same options)", got.Model.Args)
	}
	// A change of the pool's arguments: observe reports what runs.
	lane = configure("--temp", "0.7", "--jinja")
	if got := observed(); !sameOptions(got.Model.Args, []string{"--temp", "0.5", "--jinja"}) {
		t.Errorf("after the pool's args changed, observed args %q; want what the router runs (--temp 0.5 --jinja)", got.Model.Args)
	}
	start(lane)
	if got := observed(); !slices.Equal(got.Model.Args, []string{"--temp", "0.7", "--jinja"}) {
		t.Errorf("after the start with the new args, observed %q; want --temp 0.7 --jinja", got.Model.Args)
	}
	// The replacement's stop of the lane with the old args leaves the new.
	if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "stop", Kind: sdk.KindStop, Lane: &first}}, nil); r.Diagnostics.HasErrors() {
		t.Fatalf("stop of the old args: %v", r.Diagnostics)
	}
	if got := observed(); !slices.Equal(got.Model.Args, []string{"--temp", "0.7", "--jinja"}) {
		t.Errorf("after the stop of the old args, observed %q; want the lane with --temp 0.7 --jinja", got.Model.Args)
	}
}

// TestAnOnDemandLaneRefusesArgsItsPresetCannotHold: a short flag (the
// router reports long ones), a flag given twice or a value with a
// comment character is refused by Configure, naming the lane.
func TestAnOnDemandLaneRefusesArgsItsPresetCannotHold(t *testing.T) {
	for _, args := range [][]string{{"-c", "4096"}, {"--temp", "1", "--temp", "2"}, {"--chat-template", "a;b"}} {
		inv := sdk.Inventory{Models: []sdk.Model{{Name: "m", Path: "/m.gguf", Args: args}},
			Lanes: []sdk.LaneSpec{{Name: "notes", Model: "m", Port: 8081, Residency: sdk.OnDemand}}}
		ds := checkOnDemandArgs(inv)
		if !ds.HasErrors() || !strings.Contains(ds[0].Summary, "on-demand lane notes") {
			t.Errorf("args %q: %v; want an error naming the lane", args, ds)
		}
		inv.Lanes[0].Residency = sdk.KeepWarm
		if ds := checkOnDemandArgs(inv); ds.HasErrors() {
			t.Errorf("args %q of a keep-warm lane: %v; want none (its own process)", args, ds)
		}
	}
	if opts, err := presetOptions([]string{"--seed", "-1", "--no-mmap", "--ctx-size=4096"}); err != nil ||
		!slices.Equal(opts, []presetOption{{"seed", "-1"}, {"no-mmap", "true"}, {"ctx-size", "4096"}}) {
		t.Errorf("presetOptions = %v, %v", opts, err)
	}
}
