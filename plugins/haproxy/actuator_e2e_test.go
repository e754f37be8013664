//go:build e2e

package haproxy

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/plugins/sdk"
)

// TestE2ETheActuatorFlipsARouteStep carries out route steps as poolc
// sends them, under load, and observes the result.
func TestE2ETheActuatorFlipsARouteStep(t *testing.T) {
	ctx := context.Background()
	ls := newLanes(t)
	a := ls.start("node-a", "cognition", "chat")
	b := ls.start("node-b", "cognition", "chat")
	spec := testSpec(t, []LaneBackend{{Lane: "cognition", Addr: a.Host, Port: a.Port}}, []AliasRoute{{Alias: "chat", Lane: "cognition"}})
	p := startProxy(t, spec)
	cfg, _ := json.Marshal(map[string]any{"admin_socket": spec.AdminSocket, "map_file": spec.MapFile, "state_file": spec.StateFile})
	act := NewActuator("test")
	inv := sdk.Inventory{Gateway: true, GatewayNodes: []sdk.Node{{Name: "node-b", Address: "127.0.0.1"}}}
	if r := act.Configure(ctx, sdk.ConfigureRequest{ConfigJSON: cfg, Inventory: inv}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	load := loadgen.Start(p.base(), "chat", 4, 10)
	load.WaitServed(20, 20*time.Second)
	step := sdk.Step{ID: "route-chat", Kind: sdk.KindRoute, Target: "chat", Route: &sdk.RouteChange{Alias: "chat",
		From: &sdk.LaneEndpoint{Lane: "cognition", Node: "node-a", Address: "127.0.0.1", Port: a.Port},
		To:   &sdk.LaneEndpoint{Lane: "cognition", Node: "node-b", Address: "localhost", Port: b.Port}}}
	r := act.Apply(ctx, sdk.ApplyRequest{Step: step}, nil)
	if r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	ls.stop("node-a", a)
	load.WaitServed(20, 20*time.Second)
	res := load.Stop()
	if res.Failed != 0 {
		t.Fatalf("%d failed: %q", res.Failed, res.Errors)
	}
	obs := act.Observe(ctx, sdk.ObserveRequest{})
	if len(obs.Fleet.Routes) != 1 || obs.Fleet.Routes[0].Lane.Port != b.Port || obs.Fleet.Routes[0].Lane.Lane != "cognition" || obs.Fleet.Routes[0].Lane.Node != "node-b" {
		t.Fatalf("observed %+v %v", obs.Fleet.Routes, obs.Diagnostics)
	}
	// To the cloud, then removed.
	step.Route = &sdk.RouteChange{Alias: "chat", To: &sdk.LaneEndpoint{Lane: sdk.Cloud}}
	if r := act.Apply(ctx, sdk.ApplyRequest{Step: step}, nil); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	if obs := act.Observe(ctx, sdk.ObserveRequest{}); len(obs.Fleet.Routes) != 1 || obs.Fleet.Routes[0].Lane.Lane != sdk.Cloud {
		t.Fatalf("observed %+v", obs.Fleet.Routes)
	}
	step.Route = &sdk.RouteChange{Alias: "chat"}
	if r := act.Apply(ctx, sdk.ApplyRequest{Step: step}, nil); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	if obs := act.Observe(ctx, sdk.ObserveRequest{}); len(obs.Fleet.Routes) != 0 {
		t.Fatalf("observed %+v", obs.Fleet.Routes)
	}
	t.Logf("served %d through the actuator's route step, %d failed", res.Served, res.Failed)
}
