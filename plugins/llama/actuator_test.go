package llama

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sdk/sdktest"
	"poolc.dev/poolc/pools"
)

func TestActuatorConformance(t *testing.T) {
	sdktest.Conformance(t, NewActuator("test"))
}

// oneLaneActuator configures an actuator running lanes on this machine
// with the stand-in, its config block the test's settings and extra,
// for a pool of one keep-warm lane "cognition" (serving model qwen
// under alias chat) on node-a. It returns the actuator, the lane as a
// step carries it, the lane as the node runs it, and the settings.
func oneLaneActuator(t *testing.T, extra map[string]any) (*Actuator, *sdk.Lane, Lane, Settings) {
	t.Helper()
	set := testSettings(t)
	block := map[string]any{"local": true, "llama_server": set.Binary, "state_dir": set.StateDir,
		"listen_host": "127.0.0.1", "env": set.Env, "stop_grace_seconds": 3}
	for k, v := range extra {
		block[k] = v
	}
	cfg, _ := json.Marshal(block)
	l := testLane(t, "cognition", 400_000, "chat")
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1"}
	model := sdk.Model{Name: "qwen", Path: l.Model, SizeGB: 0.0004}
	act := NewActuator("test")
	if r := act.Configure(context.Background(), sdk.ConfigureRequest{Pool: "p", ConfigJSON: cfg, Inventory: sdk.Inventory{
		Nodes: []sdk.Node{node}, Models: []sdk.Model{model},
		Lanes: []sdk.LaneSpec{{Name: "cognition", Model: "qwen", Port: l.Port, Aliases: l.Aliases, Residency: sdk.KeepWarm}},
	}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	return act, &sdk.Lane{Name: "cognition", Node: node, Model: model, Port: l.Port, Aliases: l.Aliases, Residency: sdk.KeepWarm}, l, set
}

// TestActuatorRunsALaneOnThisMachine drives the actuator as poolc does:
// configure with an inventory, start, observe, stop, observe.
func TestActuatorRunsALaneOnThisMachine(t *testing.T) {
	ctx := context.Background()
	act, lane, _, _ := oneLaneActuator(t, nil)
	var progress []string
	r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "start", Kind: sdk.KindStart, Lane: lane}}, func(p sdk.Progress) { progress = append(progress, p.Message) })
	if r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	if r.Observed == nil || len(r.Observed.Lanes) != 1 || !r.Observed.Lanes[0].Loaded || len(progress) == 0 {
		t.Errorf("start observed %+v, progress %q", r.Observed, progress)
	}
	defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: lane}}, nil)
	obs := act.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Lanes) != 1 || obs.Fleet.Lanes[0].Residency != sdk.KeepWarm || obs.Fleet.Lanes[0].Model.Name != "qwen" ||
		obs.Fleet.Lanes[0].Node.Name != "node-a" || len(obs.Fleet.Nodes) != 1 || len(obs.Fleet.Unobserved) != 0 {
		t.Fatalf("observed %+v %v", obs.Fleet, obs.Diagnostics)
	}
	// A residency change between keep-warm and preferred keeps the process.
	before := obs.Fleet.Lanes[0]
	changed := *lane
	changed.Residency = sdk.Preferred
	r = act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "res-preferred", Kind: sdk.KindResidency, Lane: &changed, From: sdk.KeepWarm}}, nil)
	if r.Diagnostics.HasErrors() || len(r.Diagnostics) != 0 || r.Observed == nil || len(r.Observed.Lanes) != 1 || r.Observed.Lanes[0].Residency != sdk.Preferred {
		t.Fatalf("residency preferred: %+v", r)
	}
	// The process records its new residency: observe reports it, not the
	// pool's keep-warm the actuator was configured with.
	if again := act.Observe(ctx, sdk.ObserveRequest{}); len(again.Fleet.Lanes) != 1 || again.Fleet.Lanes[0].Port != before.Port ||
		again.Fleet.Lanes[0].Residency != sdk.Preferred {
		t.Errorf("after the residency step: %+v", again.Fleet.Lanes)
	}
	r = act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "stop", Kind: sdk.KindStop, Lane: lane}}, nil)
	if r.Diagnostics.HasErrors() || r.Observed == nil || len(r.Observed.Lanes) != 0 {
		t.Fatalf("stop: %+v", r)
	}
	if obs := act.Observe(ctx, sdk.ObserveRequest{}); len(obs.Fleet.Lanes) != 0 {
		t.Errorf("after stop: %+v", obs.Fleet.Lanes)
	}
}

// TestActuatorReportsTheResidencyALaneStartedWith: a lane's own process
// is observed with the residency it was started with, recorded in its
// metadata, not the one the pool declares now: while a change to
// on-demand is under way, the keep-warm process is still keep-warm.
// Metadata that records no residency (written before it did) falls back
// to the pool's declaration.
func TestActuatorReportsTheResidencyALaneStartedWith(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	cfg, _ := json.Marshal(map[string]any{"local": true, "llama_server": set.Binary, "state_dir": set.StateDir,
		"listen_host": "127.0.0.1", "env": set.Env, "stop_grace_seconds": 3, "router_port": freePort(t)})
	l := testLane(t, "cognition", 400_000, "chat")
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1", MemoryGB: 64, BudgetGB: 56}
	model := sdk.Model{Name: "qwen", Path: l.Model, SizeGB: 0.0004, MemoryGB: 4}
	act := NewActuator("test")
	configure := func(res string) {
		t.Helper()
		if r := act.Configure(ctx, sdk.ConfigureRequest{Pool: "p", ConfigJSON: cfg, Inventory: sdk.Inventory{
			Nodes: []sdk.Node{node}, Models: []sdk.Model{model},
			Lanes: []sdk.LaneSpec{{Name: "cognition", Model: "qwen", Port: l.Port, Aliases: l.Aliases, Residency: res}},
		}}); r.Diagnostics.HasErrors() {
			t.Fatal(r.Diagnostics)
		}
	}
	observe := func() sdk.Lane {
		t.Helper()
		obs := act.Observe(ctx, sdk.ObserveRequest{})
		if len(obs.Fleet.Lanes) != 1 {
			t.Fatalf("observed %+v %v", obs.Fleet.Lanes, obs.Diagnostics)
		}
		return obs.Fleet.Lanes[0]
	}
	configure(sdk.KeepWarm)
	lane := &sdk.Lane{Name: "cognition", Node: node, Model: model, Port: l.Port, Aliases: l.Aliases, Residency: sdk.KeepWarm}
	if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "start", Kind: sdk.KindStart, Lane: lane}}, nil); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: lane}}, nil)

	// The pool now declares it on-demand; its process is still keep-warm.
	configure(sdk.OnDemand)
	if got := observe(); got.Residency != sdk.KeepWarm {
		t.Errorf("while the pool says on-demand: residency %q; want keep-warm, as the process started", got.Residency)
	}

	// Metadata from before residency was recorded: the pool's word, as
	// an own process (on-demand is not).
	meta := filepath.Join(set.StateDir, node.Name, Lane{Name: "cognition", Port: l.Port}.key()+".json")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["residency"] != sdk.KeepWarm {
		t.Fatalf("metadata %s records residency %v; want keep-warm", b, m["residency"])
	}
	delete(m, "residency")
	b, _ = json.Marshal(m)
	if err := os.WriteFile(meta, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := observe(); got.Residency != sdk.Preferred {
		t.Errorf("old metadata, the pool says on-demand: residency %q; want preferred", got.Residency)
	}
	configure(sdk.KeepWarm)
	if got := observe(); got.Residency != sdk.KeepWarm {
		t.Errorf("old metadata, the pool says keep-warm: residency %q", got.Residency)
	}
}

func TestActuatorRefusesALaneOnTheRouterPort(t *testing.T) {
	inv := sdk.Inventory{Lanes: []sdk.LaneSpec{{Name: "chat", Port: pools.DefaultRouterPort}}}
	r := NewActuator("test").Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{"local":true}`), Inventory: inv})
	if !r.Diagnostics.HasErrors() || r.Diagnostics[0].Path[0] != "router_port" || !strings.Contains(r.Diagnostics[0].Summary, "lane chat") {
		t.Errorf("a lane on the router's port: %+v", r.Diagnostics)
	}
	if r := NewActuator("test").Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{"local":true,"router_port":9001}`), Inventory: inv}); r.Diagnostics.HasErrors() {
		t.Errorf("with another router_port: %+v", r.Diagnostics)
	}
}

func TestActuatorRefusesAnUnknownSetting(t *testing.T) {
	r := NewActuator("test").Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{"local":true,"bogus":1}`)})
	if !r.Diagnostics.HasErrors() || len(r.Diagnostics[0].Path) == 0 || r.Diagnostics[0].Path[0] != "bogus" {
		t.Errorf("%+v", r.Diagnostics)
	}
}

// TestActuatorServesOnDemandLanesFromTheRouter: an on-demand lane's start
// makes it a model of the node's router (not loaded until its first
// request), observe reports it from the router's GET /models at the
// lane's declared port, a residency step across on-demand is refused
// (it is planned make-before-break), and its stop leaves the router,
// which stops with no model.
func TestActuatorServesOnDemandLanesFromTheRouter(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	routerPort := freePort(t)
	cfg, _ := json.Marshal(map[string]any{"local": true, "llama_server": set.Binary, "state_dir": set.StateDir,
		"listen_host": "127.0.0.1", "env": set.Env, "stop_grace_seconds": 3, "router_port": routerPort})
	l := testLane(t, "vision", 400_000, "see")
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1", MemoryGB: 64, BudgetGB: 56}
	model := sdk.Model{Name: "vl", Path: l.Model, SizeGB: 0.0004, MemoryGB: 20}
	act := NewActuator("test")
	if r := act.Configure(ctx, sdk.ConfigureRequest{Pool: "p", ConfigJSON: cfg, Inventory: sdk.Inventory{
		Nodes: []sdk.Node{node}, Models: []sdk.Model{model},
		Lanes: []sdk.LaneSpec{{Name: "vision", Model: "vl", Port: l.Port, Aliases: l.Aliases, Residency: sdk.OnDemand}},
	}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	lane := &sdk.Lane{Name: "vision", Node: node, Model: model, Port: l.Port, Aliases: l.Aliases, Residency: sdk.OnDemand}
	apply := func(kind sdk.StepKind, lane *sdk.Lane, from string) sdk.ApplyResponse {
		t.Helper()
		r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: string(kind), Kind: kind, Lane: lane, From: from}}, nil)
		if r.Diagnostics.HasErrors() {
			t.Fatalf("%s %s: %v", kind, lane.Residency, r.Diagnostics)
		}
		return r
	}
	observe := func() sdk.Lane {
		t.Helper()
		obs := act.Observe(ctx, sdk.ObserveRequest{})
		if len(obs.Fleet.Lanes) != 1 {
			t.Fatalf("observed %+v %v", obs.Fleet.Lanes, obs.Diagnostics)
		}
		return obs.Fleet.Lanes[0]
	}
	router := Lane{Name: RouterLane, Host: "127.0.0.1", Port: routerPort}
	defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: lane}}, nil)

	if r := apply(sdk.KindStart, lane, ""); r.Observed == nil || len(r.Observed.Lanes) != 1 || r.Observed.Lanes[0].Loaded {
		t.Errorf("start observed %+v; want the lane, not loaded", r.Observed)
	}
	if got := observe(); got.Residency != sdk.OnDemand || got.Loaded || got.Port != l.Port || got.Model.Name != "vl" {
		t.Errorf("after start: %+v; want on-demand, not loaded, at port %d", got, l.Port)
	}
	// The lane's own port is free: the router serves it.
	if err := loadgen.Chat(ctx, http.DefaultClient, "http://"+router.probeAddr(), "see", 3); err != nil {
		t.Fatal(err)
	}
	if got := observe(); !got.Loaded {
		t.Errorf("after its first request: %+v; want loaded", got)
	}
	n, err := act.node(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	served, err := n.RouterServes(ctx)
	if err != nil || len(served) != 1 || served[0].Name != "vision" {
		t.Fatalf("the router serves %+v (%v)", served, err)
	}
	if err := apply(sdk.KindDrain, lane, ""); err.Observed == nil {
		t.Errorf("drain observed nothing")
	}

	// A residency step across on-demand changes the process and its
	// port: poolc plans that as start, route, drain and stop, never in
	// place.
	warm := *lane
	warm.Residency = sdk.KeepWarm
	if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "residency", Kind: sdk.KindResidency, Lane: &warm, From: sdk.OnDemand}}, nil); !r.Diagnostics.HasErrors() {
		t.Errorf("residency on-demand to keep-warm: %+v; want it refused", r)
	}
	if got := observe(); got.Residency != sdk.OnDemand {
		t.Errorf("after the refused residency step: %+v", got)
	}

	apply(sdk.KindStop, lane, "")
	if obs := act.Observe(ctx, sdk.ObserveRequest{}); len(obs.Fleet.Lanes) != 0 {
		t.Errorf("after stop: %+v", obs.Fleet.Lanes)
	}
	if served, _ := n.RouterServes(ctx); len(served) != 0 {
		t.Errorf("after stop the router serves %+v", served)
	}
}

// TestActuatorRefusesAnOnDemandLaneThatCannotFit: --models-max comes from
// the node's budget beside its reserved lanes; a model larger than that
// room fails the start with the numbers.
func TestActuatorRefusesAnOnDemandLaneThatCannotFit(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	cfg, _ := json.Marshal(map[string]any{"local": true, "llama_server": set.Binary, "state_dir": set.StateDir,
		"listen_host": "127.0.0.1", "router_port": freePort(t)})
	l := testLane(t, "video", 1000, "film")
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1", MemoryGB: 64, BudgetGB: 56}
	act := NewActuator("test")
	if r := act.Configure(ctx, sdk.ConfigureRequest{ConfigJSON: cfg, Inventory: sdk.Inventory{Nodes: []sdk.Node{node}}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	lane := &sdk.Lane{Name: "video", Node: node, Model: sdk.Model{Name: "v", Path: l.Model, MemoryGB: 70}, Port: l.Port, Residency: sdk.OnDemand}
	r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "start", Kind: sdk.KindStart, Lane: lane}}, nil)
	if !r.Diagnostics.HasErrors() || !strings.Contains(r.Diagnostics[0].Summary, "70.0 GB") || !strings.Contains(r.Diagnostics[0].Summary, "56.0 GB") {
		t.Errorf("start of a 70 GB on-demand lane on a 56 GB budget: %+v", r.Diagnostics)
	}
}

// TestActuatorRunsALaneReplacementBesideTheOldProcess is what a model
// upgrade under the same lane name needs: the new process of the lane
// starts on another port (the planner's spare) with the new weights while
// the old one still serves, each observed at its port, and the stop of
// the old leaves the new. For an on-demand lane the router's model of the
// lane takes the new weights, and the stop of the old weights leaves it.
func TestActuatorRunsALaneReplacementBesideTheOldProcess(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	cfg, _ := json.Marshal(map[string]any{"local": true, "llama_server": set.Binary, "state_dir": set.StateDir,
		"listen_host": "127.0.0.1", "env": set.Env, "stop_grace_seconds": 3, "router_port": freePort(t)})
	old, upgraded := testLane(t, "cognition", 300_000, "chat"), testLane(t, "cognition-v2", 300_000)
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1", MemoryGB: 64, BudgetGB: 56}
	act := NewActuator("test")
	if r := act.Configure(ctx, sdk.ConfigureRequest{ConfigJSON: cfg, Inventory: sdk.Inventory{Nodes: []sdk.Node{node},
		Lanes: []sdk.LaneSpec{{Name: "cognition", Model: "q", Port: old.Port, Aliases: []string{"chat"}, Residency: sdk.KeepWarm}}}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	lane := func(l Lane, res string) *sdk.Lane {
		sum := strings.Repeat("a", 64)
		if l.Model == upgraded.Model {
			sum = strings.Repeat("b", 64)
		}
		return &sdk.Lane{Name: "cognition", Node: node, Model: sdk.Model{Name: "q", Path: l.Model, SHA256: sum, SizeGB: 0.0003, MemoryGB: 4}, Port: l.Port, Aliases: []string{"chat"}, Residency: res}
	}
	apply := func(kind sdk.StepKind, l *sdk.Lane) {
		t.Helper()
		if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: string(kind), Kind: kind, Lane: l}}, nil); r.Diagnostics.HasErrors() {
			t.Fatalf("%s of %s at %d: %v", kind, l.Model.Path, l.Port, r.Diagnostics)
		}
	}
	ports := func() map[int]string {
		t.Helper()
		obs := act.Observe(ctx, sdk.ObserveRequest{})
		out := map[int]string{}
		for _, l := range obs.Fleet.Lanes {
			out[l.Port] = l.Name + " " + l.Model.Path
			if l.Model.SHA256 != lane(Lane{Model: l.Model.Path}, "").Model.SHA256 {
				t.Errorf("lane at port %d observed with sha256 %q, not that of the weights it started with", l.Port, l.Model.SHA256)
			}
		}
		return out
	}
	defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: lane(upgraded, sdk.KeepWarm)}}, nil)
	defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: lane(old, sdk.KeepWarm)}}, nil)

	apply(sdk.KindStart, lane(old, sdk.KeepWarm))
	apply(sdk.KindStart, lane(upgraded, sdk.KeepWarm))
	if got := ports(); len(got) != 2 || got[old.Port] != "cognition "+old.Model || got[upgraded.Port] != "cognition "+upgraded.Model {
		t.Fatalf("with both processes of cognition: %v", got)
	}
	apply(sdk.KindDrain, lane(old, sdk.KeepWarm))
	apply(sdk.KindStop, lane(old, sdk.KeepWarm))
	if got := ports(); len(got) != 1 || got[upgraded.Port] != "cognition "+upgraded.Model {
		t.Fatalf("after the stop of the old process: %v", got)
	}
	apply(sdk.KindStop, lane(upgraded, sdk.KeepWarm))

	// On demand: the router's model takes the new weights.
	apply(sdk.KindStart, lane(old, sdk.OnDemand))
	apply(sdk.KindStart, lane(upgraded, sdk.OnDemand))
	n, _ := act.node(ctx, node)
	served, err := n.RouterServes(ctx)
	if err != nil || len(served) != 1 || served[0].Path != upgraded.Model {
		t.Fatalf("the router serves %+v (%v); want cognition from %s", served, err, upgraded.Model)
	}
	apply(sdk.KindStop, lane(old, sdk.OnDemand))
	if served, _ := n.RouterServes(ctx); len(served) != 1 || served[0].Path != upgraded.Model {
		t.Fatalf("after the stop of the old weights the router serves %+v", served)
	}
	apply(sdk.KindStop, lane(upgraded, sdk.OnDemand))
	if served, _ := n.RouterServes(ctx); len(served) != 0 {
		t.Fatalf("after the last stop the router serves %+v", served)
	}
}

// TestActuatorForgetsAKilledProcessOfALaneMovedToTheRouter: a lane's own
// process killed by hand, then the lane started on-demand (a profile
// made it so): the start forgets the dead process's pidfile, which no
// stop step would, so nothing is left as drift.
func TestActuatorForgetsAKilledProcessOfALaneMovedToTheRouter(t *testing.T) {
	ctx := context.Background()
	act, lane, _, set := oneLaneActuator(t, map[string]any{"router_port": freePort(t)})
	pid := startAndKill(t, act, lane)
	od := *lane
	od.Node.MemoryGB, od.Node.BudgetGB = 64, 56
	od.Residency = sdk.OnDemand
	defer act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "cleanup", Kind: sdk.KindStop, Lane: &od}}, nil)
	if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "start-od", Kind: sdk.KindStart, Lane: &od}}, nil); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	forgotten(t, act, set, pid, "after the on-demand start")
}

// TestActuatorForgetsAKilledProcessOfALaneThatLeftTheNode: a lane's own
// process killed by hand, then the lane gone from the node (moved to
// another, or removed): no step of its own comes there, and the next
// step on the node (here a stop of another lane) forgets its pidfile.
func TestActuatorForgetsAKilledProcessOfALaneThatLeftTheNode(t *testing.T) {
	ctx := context.Background()
	act, lane, _, set := oneLaneActuator(t, nil)
	pid := startAndKill(t, act, lane)
	other := *lane
	other.Name, other.Port = "other", freePort(t)
	if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "stop-other", Kind: sdk.KindStop, Lane: &other}}, nil); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	forgotten(t, act, set, pid, "after a stop on the node")
}

// forgotten checks, after what was done, that act observes no drift and
// that no pidfile of lane cognition, whose process pid is gone, is left.
func forgotten(t *testing.T, act *Actuator, set Settings, pid int, after string) {
	t.Helper()
	if obs := act.Observe(context.Background(), sdk.ObserveRequest{}); len(obs.Diagnostics) != 0 {
		t.Errorf("%s: %v", after, obs.Diagnostics)
	}
	if left, _ := filepath.Glob(filepath.Join(set.StateDir, "cognition@*.pid")); len(left) != 0 {
		t.Errorf("%s: left %v, naming pid %d, which is gone", after, left, pid)
	}
}

// startAndKill starts lane with act, kills its process by hand and
// returns its pid once it is gone.
func startAndKill(t *testing.T, act *Actuator, lane *sdk.Lane) int {
	t.Helper()
	ctx := context.Background()
	if r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "start", Kind: sdk.KindStart, Lane: lane}}, nil); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	obs := act.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Lanes) != 1 || obs.Fleet.Lanes[0].Process == nil {
		t.Fatalf("observed %+v %v", obs.Fleet.Lanes, obs.Diagnostics)
	}
	pid := obs.Fleet.Lanes[0].Process.PID
	syscall.Kill(pid, syscall.SIGKILL)
	for processLives(pid) {
		time.Sleep(10 * time.Millisecond)
	}
	return pid
}
