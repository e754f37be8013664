//go:build e2e

package haproxy

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/plugins/llama"
	"poolc.dev/poolc/plugins/sdk"
)

// TestE2EAddingAnOnDemandLaneBesideAStreamingOneFailsNoRequest: poolc
// apply makes cognition a model of n1's router, and while the load
// generator streams chat completions for its alias through HAProxy the
// whole time, lane scribe is added to the same router (prefetch, start,
// route of notes to the router, as poolc plans it for an on-demand
// lane), serves a request through HAProxy, and is removed again
// (drain, stop). The router rereads its preset in place each time, its
// process never changes, and not one of chat's requests fails or is cut.
func TestE2EAddingAnOnDemandLaneBesideAStreamingOneFailsNoRequest(t *testing.T) {
	ctx := t.Context()
	f := newFleet(t)
	f.residency["cognition"] = "on-demand"
	f.writePool(`"n1"`)
	f.apply()
	router := f.lanePIDs()["n1/"+llama.RouterLane]
	if router == 0 || f.routerStates(0) != "cognition=unloaded" {
		t.Fatalf("after the bring-up: lane processes %v, n1's router %s", f.lanePIDs(), f.routerStates(0))
	}

	// The actuators as the pool would configure them with scribe on
	// demand too, handed the steps of adding it to n1.
	a := f.actuators()
	notes := sdk.Model{Name: "q-notes", Path: filepath.Join(f.dir, "models", "q-notes.gguf"), Source: f.weightsOf("q-notes").src,
		SHA256: f.weightsOf("q-notes").sum, SizeGB: 0.002, MemoryGB: 4}
	var nodes []sdk.Node
	for i := range f.nodes {
		nodes = append(nodes, f.sdkNode(i))
	}
	lanes := []sdk.LaneSpec{
		{Name: "cognition", Model: "q", Port: f.port("cognition"), Aliases: []string{"chat"}, Residency: sdk.OnDemand},
		{Name: "scribe", Model: "q-notes", Port: f.port("scribe"), Aliases: []string{"notes"}, Residency: sdk.OnDemand},
	}
	cfg, _ := json.Marshal(map[string]any{"known_hosts": f.known, "key_file": f.keyFile, "no_agent": true, "llama_server": f.stub,
		"state_dir": filepath.Join(f.dir, "lanes"), "stop_grace_seconds": 5, "router_port": f.routerPort,
		"env": map[string]string{"LLAMASTUB_LOAD_BYTES_PER_SEC": "8000000", "LLAMASTUB_TOKEN_INTERVAL": "10ms"}})
	if r := a.llama.Configure(ctx, sdk.ConfigureRequest{Pool: "fleet", ConfigJSON: cfg, Inventory: sdk.Inventory{Nodes: nodes,
		Models: []sdk.Model{f.model(), notes}, Lanes: lanes}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	spec := f.proxy.spec
	cfg, _ = json.Marshal(map[string]any{"admin_socket": spec.AdminSocket, "map_file": spec.MapFile, "state_file": spec.StateFile, "router_port": f.routerPort})
	if r := a.gw.Configure(ctx, sdk.ConfigureRequest{Pool: "fleet", ConfigJSON: cfg, Inventory: sdk.Inventory{Gateway: true, GatewayNodes: nodes, Lanes: lanes,
		Aliases: []sdk.AliasSpec{{Name: "chat", Lane: "cognition"}, {Name: "notes", Lane: "scribe"}}}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}

	load := loadgen.Start(f.proxy.base(), "chat", 6, 10)
	defer load.Stop()
	if !load.WaitServed(30, 60*time.Second) {
		t.Fatalf("no traffic before the change: %d failed", load.Failed())
	}
	scribe := &sdk.Lane{Name: "scribe", Node: f.sdkNode(0), Model: notes, Port: f.port("scribe"), Aliases: []string{"notes"}, Residency: sdk.OnDemand}
	a.apply(ctx, sdk.Step{ID: "prefetch:q-notes@n1", Kind: sdk.KindPrefetch, Target: "q-notes", Prefetch: &sdk.Prefetch{Node: f.sdkNode(0), Model: notes}})
	a.apply(ctx, sdk.Step{ID: "start:scribe@n1 (on-demand)", Kind: sdk.KindStart, Target: "scribe", Lane: scribe})
	a.apply(ctx, sdk.Step{ID: "route:notes", Kind: sdk.KindRoute, Target: "notes", Route: &sdk.RouteChange{Alias: "notes",
		To: &sdk.LaneEndpoint{Lane: "scribe", Node: "n1", Address: f.nodes[0].Host, Port: f.port("scribe"), Router: true}}})
	if err := loadgen.Chat(ctx, http.DefaultClient, f.proxy.base(), "notes", 3); err != nil {
		t.Fatalf("notes through HAProxy, from n1's router: %v", err)
	}
	if got := f.routerStates(0); !strings.Contains(got, "cognition=loaded") || !strings.Contains(got, "scribe=loaded") {
		t.Errorf("n1's router with both lanes used: %s", got)
	}
	served := load.Served()
	if !load.WaitServed(served+30, 60*time.Second) {
		t.Fatalf("no traffic after scribe was added: %d failed", load.Failed())
	}
	a.apply(ctx, sdk.Step{ID: "drain:scribe@n1", Kind: sdk.KindDrain, Target: "scribe", Lane: scribe})
	a.apply(ctx, sdk.Step{ID: "stop:scribe@n1", Kind: sdk.KindStop, Target: "scribe", Lane: scribe})
	served = load.Served()
	if !load.WaitServed(served+30, 60*time.Second) {
		t.Fatalf("no traffic after scribe was removed: %d failed", load.Failed())
	}
	res := load.Stop()
	t.Logf("scribe added to and removed from n1's router beside chat's streams: %d requests served, %d failed, in %s",
		res.Served, res.Failed, res.Duration.Round(time.Millisecond))
	if res.Failed != 0 {
		t.Fatalf("%d requests failed or were cut: %q", res.Failed, res.Errors)
	}
	if got := f.lanePIDs()["n1/"+llama.RouterLane]; got != router {
		t.Errorf("n1's router is pid %d, was %d: it was restarted", got, router)
	}
	if got := f.routerStates(0); got != "cognition=loaded" {
		t.Errorf("n1's router after scribe's stop: %s", got)
	}
}
