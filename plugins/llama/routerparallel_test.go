package llama

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"poolc.dev/poolc/plugins/sdk"
)

// TestActuatorChangesARouterFromParallelSteps runs the start steps of
// four on-demand lanes of one node at once, as an apply at the default
// parallelism does, with the default (relative) state_dir: the router
// serves all four after them, its preset under the login's home; then
// the stops, at once too, leave no model and no router.
func TestActuatorChangesARouterFromParallelSteps(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("HOME", home)
	set := testSettings(t)
	routerPort := freePort(t)
	cfg, _ := json.Marshal(map[string]any{"local": true, "llama_server": set.Binary,
		"listen_host": "127.0.0.1", "env": set.Env, "stop_grace_seconds": 3, "router_port": routerPort})
	node := sdk.Node{Name: "node-a", Address: "127.0.0.1", MemoryGB: 64, BudgetGB: 56}
	var inv sdk.Inventory
	inv.Nodes = []sdk.Node{node}
	var lanes []*sdk.Lane
	for i := range 4 {
		l := testLane(t, fmt.Sprintf("od%d", i), 400_000, fmt.Sprintf("alias%d", i))
		m := sdk.Model{Name: l.Name + "-m", Path: l.Model, SizeGB: 0.0004, MemoryGB: 5}
		inv.Models = append(inv.Models, m)
		inv.Lanes = append(inv.Lanes, sdk.LaneSpec{Name: l.Name, Model: m.Name, Port: l.Port, Aliases: l.Aliases, Residency: sdk.OnDemand})
		lanes = append(lanes, &sdk.Lane{Name: l.Name, Node: node, Model: m, Port: l.Port, Aliases: l.Aliases, Residency: sdk.OnDemand})
	}
	act := NewActuator("test")
	if r := act.Configure(ctx, sdk.ConfigureRequest{Pool: "p", ConfigJSON: cfg, Inventory: inv}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	all := func(kind sdk.StepKind) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, len(lanes))
		for i, l := range lanes {
			wg.Go(func() {
				r := act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: string(kind) + l.Name, Kind: kind, Lane: l}}, nil)
				if r.Diagnostics.HasErrors() {
					errs[i] = fmt.Errorf("%s %s: %v", kind, l.Name, r.Diagnostics)
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { all(sdk.KindStop) })
	all(sdk.KindStart)
	n, err := act.node(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	served, err := n.RouterServes(ctx)
	if err != nil || len(served) != len(lanes) {
		t.Fatalf("after %d parallel starts the router serves %+v (%v)", len(lanes), served, err)
	}
	if _, err := os.Stat(filepath.Join(home, DefaultStateDir, node.Name, RouterLane+".ini")); err != nil {
		t.Errorf("the router's preset is not under the login's home: %v", err)
	}
	spec, err := act.routerSpec(ctx, node, n, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	states, err := n.RouterModels(ctx, spec)
	if err != nil || len(states) != len(lanes) {
		t.Errorf("the router lists %+v (%v); want %d models", states, err, len(lanes))
	}
	all(sdk.KindStop)
	if served, err := n.RouterServes(ctx); err != nil || len(served) != 0 {
		t.Errorf("after the parallel stops the router serves %+v (%v)", served, err)
	}
}
