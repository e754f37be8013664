package llama

import (
	"context"
	"encoding/json"
	"testing"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sdk/sdktest"
)

func TestActuatorConformance(t *testing.T) {
	sdktest.Conformance(t, NewActuator("test"))
}

// TestActuatorRunsALaneOnThisMachine drives the actuator as poolc does:
// configure with an inventory, start, observe, stop, observe.
func TestActuatorRunsALaneOnThisMachine(t *testing.T) {
	ctx := context.Background()
	set := testSettings(t)
	cfg, _ := json.Marshal(map[string]any{"local": true, "llama_server": set.Binary, "state_dir": set.StateDir,
		"listen_host": "127.0.0.1", "env": set.Env, "stop_grace_seconds": 3})
	l := testLane(t, "cognition", 400_000, "chat")
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1"}
	model := sdk.Model{Name: "qwen", Path: l.Model, SizeGB: 0.0004}
	act := NewActuator("test")
	if r := act.Configure(ctx, sdk.ConfigureRequest{Pool: "p", ConfigJSON: cfg, Inventory: sdk.Inventory{
		Nodes: []sdk.Node{node}, Models: []sdk.Model{model},
		Lanes: []sdk.LaneSpec{{Name: "cognition", Model: "qwen", Port: l.Port, Aliases: l.Aliases, Residency: sdk.KeepWarm}},
	}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	lane := &sdk.Lane{Name: "cognition", Node: node, Model: model, Port: l.Port, Aliases: l.Aliases, Residency: sdk.KeepWarm}
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
		obs.Fleet.Lanes[0].Node.Name != "node-a" || len(obs.Fleet.Nodes) != 1 || obs.Fleet.Nodes[0].Down {
		t.Fatalf("observed %+v %v", obs.Fleet, obs.Diagnostics)
	}
	r = act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "stop", Kind: sdk.KindStop, Lane: lane}}, nil)
	if r.Diagnostics.HasErrors() || r.Observed == nil || len(r.Observed.Lanes) != 0 {
		t.Fatalf("stop: %+v", r)
	}
	if obs := act.Observe(ctx, sdk.ObserveRequest{}); len(obs.Fleet.Lanes) != 0 {
		t.Errorf("after stop: %+v", obs.Fleet.Lanes)
	}
}

func TestActuatorRefusesAnUnknownSetting(t *testing.T) {
	r := NewActuator("test").Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{"local":true,"bogus":1}`)})
	if !r.Diagnostics.HasErrors() || len(r.Diagnostics[0].Path) == 0 || r.Diagnostics[0].Path[0] != "bogus" {
		t.Errorf("%+v", r.Diagnostics)
	}
}
