//go:build e2e

package haproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/internal/testing/loadgen"
	"poolc.dev/poolc/plugins/llama"
	"poolc.dev/poolc/plugins/sdk"
)

// routerStates returns "lane=state" for each model of the router on node
// i, as its GET /models reports them.
func (f *fleet) routerStates(i int) string {
	f.t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/models", joinHostPort(f.nodes[i].Host, f.routerPort)))
	if err != nil {
		return "no router: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var list struct {
		Data []struct {
			ID     string `json:"id"`
			Status struct {
				Value string `json:"value"`
			} `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		f.t.Fatalf("router GET /models: %v: %s", err, b)
	}
	var out []string
	for _, d := range list.Data {
		out = append(out, d.ID+"="+d.Status.Value)
	}
	return strings.Join(out, " ")
}

// TestE2EApplyServesAnOnDemandLaneFromTheRouter: poolc apply makes an
// on-demand lane a model of its node's router (no process of its own),
// HAProxy routes its alias to the router's port, the model loads on the
// first request through the gateway, and a refreshed plan is empty
// before and after that load.
func TestE2EApplyServesAnOnDemandLaneFromTheRouter(t *testing.T) {
	f := newFleet(t)
	f.residency["scribe"] = "on-demand"
	f.writePool(`"n1", "n2"`)
	out := f.apply()
	if !strings.Contains(out, "start:scribe@n3") || !strings.Contains(out, "route:notes") {
		t.Errorf("apply output lacks the start of scribe or the route of notes:\n%s", out)
	}
	f.planIsEmpty("after the bring-up")
	pids := f.lanePIDs()
	if len(pids) != 2 || pids["n1/cognition"] == 0 || pids["n3/"+llama.RouterLane] == 0 {
		t.Fatalf("lane processes %v; want cognition's on n1 and the router on n3, none for scribe", pids)
	}
	if got := f.routerStates(2); got != "scribe=unloaded" {
		t.Fatalf("n3's router before any request: %s", got)
	}
	if err := loadgen.Chat(t.Context(), http.DefaultClient, f.proxy.base(), "notes", 3); err != nil {
		t.Fatalf("notes through HAProxy: %v", err)
	}
	if got := f.routerStates(2); got != "scribe=loaded" {
		t.Errorf("n3's router after a request for notes: %s", got)
	}
	f.planIsEmpty("after the first request loaded scribe")
	spec := f.proxy.spec
	cfg, _ := json.Marshal(map[string]any{"admin_socket": spec.AdminSocket, "map_file": spec.MapFile, "state_file": spec.StateFile, "router_port": f.routerPort})
	gw := NewActuator("test")
	if r := gw.Configure(t.Context(), sdk.ConfigureRequest{ConfigJSON: cfg, Inventory: sdk.Inventory{Gateway: true,
		Lanes: []sdk.LaneSpec{{Name: "scribe", Port: f.port("scribe"), Residency: sdk.OnDemand}}}}); r.Diagnostics.HasErrors() {
		t.Fatal(r.Diagnostics)
	}
	for _, r := range gw.Observe(t.Context(), sdk.ObserveRequest{}).Fleet.Routes {
		if r.Alias == "notes" && (r.Lane.Port != f.port("scribe") || !r.Lane.Router) {
			t.Errorf("the gateway reports notes at port %d (router %v), want scribe's own %d through the router (it sends it to the router's port)", r.Lane.Port, r.Lane.Router, f.port("scribe"))
		}
	}
	obs, err := f.proxy.gateway(t).Observe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		if o.Alias == "notes" && (len(o.Endpoints) != 1 || o.Endpoints[0].Port != f.routerPort) {
			t.Errorf("HAProxy sends notes to %+v; want the router's port %d", o.Endpoints, f.routerPort)
		}
	}
}

// actuators are the llama and haproxy actuators configured as the fleet's
// pool configures them, run in this process so a test can hand them the
// steps of a plan poolc does not make yet.
type actuators struct {
	f     *fleet
	llama *llama.Actuator
	gw    *Actuator
}

func (f *fleet) actuators() *actuators {
	return &actuators{f: f, llama: llama.NewActuator("test"), gw: NewActuator("test")}
}

func (f *fleet) sdkNode(i int) sdk.Node {
	s := f.nodes[i]
	return sdk.Node{Name: fmt.Sprintf("n%d", i+1), Address: s.Host, SSHPort: s.Port, SSHUser: s.User, MemoryGB: 64, BudgetGB: 56}
}

func (f *fleet) model() sdk.Model {
	return sdk.Model{Name: "q", Path: filepath.Join(f.dir, "models", "q.gguf"), Source: f.src, SHA256: f.sum, SizeGB: 0.002, MemoryGB: 4}
}

// configure gives both actuators the pool's inventory with cognition at
// residency, serving model q as model says.
func (a *actuators) configure(ctx context.Context, residency string, model sdk.Model) {
	a.f.t.Helper()
	f := a.f
	var nodes []sdk.Node
	for i := range f.nodes {
		nodes = append(nodes, f.sdkNode(i))
	}
	lanes := []sdk.LaneSpec{{Name: "cognition", Model: "q", Port: f.port("cognition"), Aliases: []string{"chat"}, Residency: residency}}
	cfg, _ := json.Marshal(map[string]any{"known_hosts": f.known, "key_file": f.keyFile, "no_agent": true, "llama_server": f.stub,
		"state_dir": filepath.Join(f.dir, "lanes"), "stop_grace_seconds": 5, "router_port": f.routerPort,
		"env": map[string]string{"LLAMASTUB_LOAD_BYTES_PER_SEC": "8000000", "LLAMASTUB_TOKEN_INTERVAL": "10ms"}})
	if r := a.llama.Configure(ctx, sdk.ConfigureRequest{Pool: "fleet", ConfigJSON: cfg, Inventory: sdk.Inventory{Nodes: nodes, Models: []sdk.Model{model}, Lanes: lanes}}); r.Diagnostics.HasErrors() {
		f.t.Fatal(r.Diagnostics)
	}
	spec := f.proxy.spec
	cfg, _ = json.Marshal(map[string]any{"admin_socket": spec.AdminSocket, "map_file": spec.MapFile, "state_file": spec.StateFile, "router_port": f.routerPort})
	if r := a.gw.Configure(ctx, sdk.ConfigureRequest{Pool: "fleet", ConfigJSON: cfg, Inventory: sdk.Inventory{Gateway: true, GatewayNodes: nodes, Lanes: lanes,
		Aliases: []sdk.AliasSpec{{Name: "chat", Lane: "cognition"}}}}); r.Diagnostics.HasErrors() {
		f.t.Fatal(r.Diagnostics)
	}
}

// apply hands one step to the actuator of its kind and fails the test on
// an error.
func (a *actuators) apply(ctx context.Context, st sdk.Step) {
	a.f.t.Helper()
	act := sdk.Actuator(a.llama)
	if st.Kind == sdk.KindRoute {
		act = a.gw
	}
	start := time.Now()
	r := act.Apply(ctx, sdk.ApplyRequest{Step: st}, nil)
	if r.Diagnostics.HasErrors() {
		a.f.t.Fatalf("step %s: %v", st.ID, r.Diagnostics)
	}
	a.f.t.Logf("step %s took %s", st.ID, time.Since(start).Round(time.Millisecond))
}

// moveResidency is the make-before-break plan of a residency change of
// cognition on n1 across on-demand: start it as it will be (its own
// process, or a model of n1's router), route chat there, then drain and
// stop it as it was.
func (a *actuators) moveResidency(ctx context.Context, from, to string) {
	f := a.f
	lane := func(res string) *sdk.Lane {
		return &sdk.Lane{Name: "cognition", Node: f.sdkNode(0), Model: f.model(), Port: f.port("cognition"), Aliases: []string{"chat"}, Residency: res}
	}
	a.configure(ctx, to, f.model())
	a.apply(ctx, sdk.Step{ID: "start:cognition@n1 (" + to + ")", Kind: sdk.KindStart, Target: "cognition", Lane: lane(to)})
	a.apply(ctx, sdk.Step{ID: "route:chat", Kind: sdk.KindRoute, Target: "chat", Route: &sdk.RouteChange{Alias: "chat",
		To: &sdk.LaneEndpoint{Lane: "cognition", Node: "n1", Address: f.nodes[0].Host, Port: f.port("cognition"), Router: to == sdk.OnDemand}}})
	a.apply(ctx, sdk.Step{ID: "drain:cognition@n1 (" + from + ")", Kind: sdk.KindDrain, Target: "cognition", Lane: lane(from)})
	a.apply(ctx, sdk.Step{ID: "stop:cognition@n1 (" + from + ")", Kind: sdk.KindStop, Target: "cognition", Lane: lane(from)})
}

// TestE2EResidencyChangeUnderLiveTrafficFailsNoRequest moves a lane from
// keep-warm (its own process) to on-demand (a model of its node's router)
// and back while the load generator streams chat completions for its
// alias through HAProxy the whole time: not one request fails or is cut.
// The steps are the make-before-break form of the change, handed to the
// actuators directly (TestE2EApplyChangesAResidencyAcrossOnDemandUnderLoad
// has poolc apply plan and run them). After each change a refreshed poolc
// plan of the pool with the new residency is empty.
func TestE2EResidencyChangeUnderLiveTrafficFailsNoRequest(t *testing.T) {
	ctx := t.Context()
	f := newFleet(t)
	f.writePool(`"n1", "n2"`)
	f.apply()
	f.planIsEmpty("after the bring-up")
	a := f.actuators()

	load := loadgen.Start(f.proxy.base(), "chat", 6, 10)
	if !load.WaitServed(30, 60*time.Second) {
		t.Fatalf("no traffic before the change: %d failed", load.Failed())
	}
	a.moveResidency(ctx, sdk.KeepWarm, sdk.OnDemand)
	if !load.WaitServed(30, 60*time.Second) {
		t.Fatalf("no traffic after the change to on-demand: %d failed %q", load.Failed(), load.Stop().Errors)
	}
	if pids := f.lanePIDs(); pids["n1/cognition"] != 0 || pids["n1/"+llama.RouterLane] == 0 {
		t.Errorf("on demand, lane processes %v; want n1's router and no process of cognition's own", pids)
	}
	if got := f.routerStates(0); got != "cognition=loaded" {
		t.Errorf("n1's router serving chat's traffic: %s", got)
	}
	mid := load.Failed()

	a.moveResidency(ctx, sdk.OnDemand, sdk.KeepWarm)
	if !load.WaitServed(30, 60*time.Second) {
		t.Fatalf("no traffic after the change back: %d failed", load.Failed())
	}
	res := load.Stop()
	t.Logf("residency keep-warm → on-demand → keep-warm under load: %d requests served, %d failed (%d in the first change), in %s",
		res.Served, res.Failed, mid, res.Duration.Round(time.Millisecond))
	if res.Failed != 0 {
		t.Fatalf("%d requests failed or were cut: %q", res.Failed, res.Errors)
	}
	if pids := f.lanePIDs(); pids["n1/cognition"] == 0 || pids["n1/"+llama.RouterLane] != 0 {
		t.Errorf("back to keep-warm, lane processes %v; want cognition's own and no router (it has no model left)", pids)
	}
	f.planIsEmpty("after the change back")

	// The other half of the check: on demand, the pool saying so, poolc
	// observes the lane in the router and the route at its port.
	a.moveResidency(ctx, sdk.KeepWarm, sdk.OnDemand)
	f.residency["cognition"] = "on-demand"
	f.writePool(`"n1", "n2"`)
	f.planIsEmpty("on demand, the pool saying so")
}

// TestE2EUpgradeUnderTheSameNameUnderLiveTrafficFailsNoRequest replaces
// lane cognition's weights (a new sha256 and source under the same model
// path) on its node while the load generator streams chat completions
// for its alias through HAProxy: the new weights are prefetched to a
// staged path beside the file the old process holds, a second process of
// the lane starts on a spare port, chat flips to it, and the old process
// drains and stops. Not one request fails or is cut, the old file is
// untouched until its process is gone, and poolc's refresh observes one
// process of the lane, at the spare port, with the new sha256. The steps
// are those of the make-before-break replacement the planner is getting,
// handed to the actuators directly.
func TestE2EUpgradeUnderTheSameNameUnderLiveTrafficFailsNoRequest(t *testing.T) {
	ctx := t.Context()
	f := newFleet(t)
	f.writePool(`"n1", "n2"`)
	f.apply()
	a := f.actuators()

	w := serveWeights(t, "q2.gguf")
	upgraded := f.model()
	upgraded.Source, upgraded.SHA256 = w.src, w.sum
	upgraded.Path = strings.TrimSuffix(upgraded.Path, ".gguf") + ".sha-" + upgraded.SHA256[:12] + ".gguf"
	// The pool now declares the new weights under the same path, as
	// poolc's inventory then says; the planner stages them beside it.
	declared := upgraded
	declared.Path = f.model().Path
	a.configure(ctx, sdk.KeepWarm, declared)
	spare := freePort(t)
	oldFile, err := os.ReadFile(f.model().Path)
	if err != nil {
		t.Fatal(err)
	}

	load := loadgen.Start(f.proxy.base(), "chat", 6, 10)
	if !load.WaitServed(30, 60*time.Second) {
		t.Fatalf("no traffic before the upgrade: %d failed", load.Failed())
	}
	was := &sdk.Lane{Name: "cognition", Node: f.sdkNode(0), Model: f.model(), Port: f.port("cognition"), Aliases: []string{"chat"}, Residency: sdk.KeepWarm}
	next := &sdk.Lane{Name: "cognition", Node: f.sdkNode(0), Model: upgraded, Port: spare, Aliases: []string{"chat"}, Residency: sdk.KeepWarm}
	a.apply(ctx, sdk.Step{ID: "prefetch:q@n1", Kind: sdk.KindPrefetch, Target: "q", Prefetch: &sdk.Prefetch{Node: f.sdkNode(0), Model: upgraded}})
	a.apply(ctx, sdk.Step{ID: "start:cognition@n1 (new weights)", Kind: sdk.KindStart, Target: "cognition", Lane: next})
	a.apply(ctx, sdk.Step{ID: "route:chat", Kind: sdk.KindRoute, Target: "chat", Route: &sdk.RouteChange{Alias: "chat",
		To: &sdk.LaneEndpoint{Lane: "cognition", Node: "n1", Address: f.nodes[0].Host, Port: spare}}})
	if now, _ := os.ReadFile(f.model().Path); !bytes.Equal(now, oldFile) {
		t.Errorf("the old process's file changed while it ran")
	}
	a.apply(ctx, sdk.Step{ID: "drain:cognition@n1 (old weights)", Kind: sdk.KindDrain, Target: "cognition", Lane: was})
	a.apply(ctx, sdk.Step{ID: "stop:cognition@n1 (old weights)", Kind: sdk.KindStop, Target: "cognition", Lane: was})
	if !load.WaitServed(30, 60*time.Second) {
		t.Fatalf("no traffic after the upgrade: %d failed", load.Failed())
	}
	res := load.Stop()
	t.Logf("upgrade under the same name under load: %d requests served, %d failed, in %s", res.Served, res.Failed, res.Duration.Round(time.Millisecond))
	if res.Failed != 0 {
		t.Fatalf("%d requests failed or were cut: %q", res.Failed, res.Errors)
	}
	obs := a.llama.Observe(ctx, sdk.ObserveRequest{})
	var lanes []string
	for _, l := range obs.Fleet.Lanes {
		if l.Name == "cognition" {
			lanes = append(lanes, fmt.Sprintf("%s@%d %s %s", l.Node.Name, l.Port, l.Model.Path, l.Model.SHA256))
		}
	}
	want := fmt.Sprintf("n1@%d %s %s", spare, upgraded.Path, upgraded.SHA256)
	if len(lanes) != 1 || lanes[0] != want {
		t.Errorf("observed cognition %q, want [%s]", lanes, want)
	}
	var staged bool
	for _, p := range obs.Fleet.Prefetched {
		staged = staged || (p.Node == "n1" && p.Model.Path == upgraded.Path && p.Model.SHA256 == upgraded.SHA256 && p.Model.Name == "q")
	}
	if !staged {
		t.Errorf("the staged weights are not observed as prefetched: %+v", obs.Fleet.Prefetched)
	}
	gw := a.gw.Observe(ctx, sdk.ObserveRequest{})
	if len(gw.Diagnostics) != 0 {
		t.Errorf("the gateway observes %v", gw.Diagnostics)
	}
	for _, r := range gw.Fleet.Routes {
		if r.Alias == "chat" && (r.Lane.Node != "n1" || r.Lane.Port != spare) {
			t.Errorf("chat routes to %+v, want n1 at the spare port %d", r.Lane, spare)
		}
	}
}
