package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
)

// observer is an in-process actuator that declares kinds and observes a
// fixed fleet, of which it says it observes the parts in observes.
type observer struct {
	kinds    []sdk.StepKind
	fleet    sdk.Fleet
	observes []string
}

func (o *observer) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{Name: "observer", Version: "2.0.0", StepKinds: o.kinds, Capabilities: sdk.Capabilities{Observes: o.observes}}
}

func (o *observer) Configure(context.Context, sdk.ConfigureRequest) sdk.ConfigureResponse {
	return sdk.ConfigureResponse{}
}

func (o *observer) Observe(context.Context, sdk.ObserveRequest) sdk.ObserveResponse {
	return sdk.ObserveResponse{Fleet: o.fleet}
}

func (o *observer) Apply(context.Context, sdk.ApplyRequest, sdk.ProgressFunc) sdk.ApplyResponse {
	return sdk.ApplyResponse{}
}

// serveDebug serves impl in this process as sdk.ServeDebug does for a
// developer, and returns its entry of POOLC_REATTACH_PLUGINS.
func serveDebug(t *testing.T, name string, impl sdk.Actuator) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	errc := make(chan error, 1)
	go func() { errc <- sdk.ServeDebug(ctx, name, impl, w) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("ServeDebug: %v", err)
		}
	})
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	value, ok := strings.CutPrefix(strings.TrimSpace(line), sdk.ReattachEnv+"='")
	if !ok {
		t.Fatalf("ServeDebug printed %q", line)
	}
	var entry map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.TrimSuffix(value, "'")), &entry); err != nil {
		t.Fatalf("ServeDebug printed %q: %v", line, err)
	}
	return entry[name]
}

func lane(name, node string) sdk.Lane { return sdk.Lane{Name: name, Node: sdk.Node{Name: node}} }

// TestReattachAndObserve reattaches to plugins served in this process and
// lays what they observe over a state: each plugin speaks only for its own
// targets and for the parts of a fleet it says it observes.
func TestReattachAndObserve(t *testing.T) {
	lanes := &observer{
		kinds:    sdk.RuntimeKinds,
		fleet:    sdk.Fleet{Lanes: []sdk.Lane{lane("b", "n1"), lane("a", "n2"), lane("elsewhere", "n9")}, Routes: []sdk.Route{{Alias: "ignored", Lane: sdk.LaneEndpoint{Lane: "cloud"}}}},
		observes: []string{sdk.ObserveLanes},
	}
	routes := &observer{
		kinds:    sdk.GatewayKinds,
		fleet:    sdk.Fleet{Routes: []sdk.Route{{Alias: "chat", Lane: sdk.LaneEndpoint{Lane: "a", Node: "n2"}}}, Lanes: []sdk.Lane{lane("ignored", "n1")}},
		observes: []string{sdk.ObserveRoutes},
	}
	env, _ := json.Marshal(map[string]json.RawMessage{
		"lanes":  serveDebug(t, "lanes", lanes),
		"routes": serveDebug(t, "routes", routes),
		"absent": serveDebug(t, "absent", &observer{kinds: []sdk.StepKind{sdk.KindStop}}),
	})
	t.Setenv(sdk.ReattachEnv, string(env))

	pool := poolFor(pools.Plugin{Name: "lanes", SHA256: strings.Repeat("0", 64)}, pools.Plugin{Name: "routes"})
	pool.Gateway = "routes"
	set, ds := host.Start(context.Background(), pool, host.Options{})
	if ds.HasErrors() {
		t.Fatal(ds.Err())
	}
	defer set.Close()
	var msgs []string
	for _, d := range ds {
		msgs = append(msgs, d.Message)
	}
	wantMsgs := []string{
		`POOLC_REATTACH_PLUGINS names plugin "absent", which the pool does not declare`,
		`plugin "lanes" is reattached through POOLC_REATTACH_PLUGINS; its sha256 is not checked`,
	}
	if !reflect.DeepEqual(msgs, wantMsgs) {
		t.Errorf("warnings = %q\nwant %q", msgs, wantMsgs)
	}
	if got := set.Plugins(); len(got) != 2 || got[0].Version != "2.0.0" || got[0].Path != "" || got[0].SHA256 != "" {
		t.Errorf("Plugins = %+v", got)
	}

	obs, ds := set.Observe(context.Background())
	fleet := pools.Fleet{
		Lanes:   []pools.LaneState{{Name: "gone", Node: "n1"}, {Name: "kept", Node: "n9"}},
		Routes:  []pools.Route{{Alias: "chat", Lane: "cloud"}},
		Members: []pools.MemberState{{PodPool: "jobs", Context: "k3d-a"}},
	}
	drift := obs.Refresh(&fleet)
	want := pools.Fleet{
		Nodes:      []pools.NodeState{},
		Lanes:      []pools.LaneState{{Name: "a", Node: "n2"}, {Name: "b", Node: "n1"}, {Name: "kept", Node: "n9"}},
		Routes:     []pools.Route{{Alias: "chat", Lane: "a", Node: "n2"}},
		Prefetched: []pools.Prefetch{},
		Members:    []pools.MemberState{{PodPool: "jobs", Context: "k3d-a"}},
	}
	wantDrift := []host.Drift{
		{Plugin: "lanes", What: `lane "a" on "n2" appeared`},
		{Plugin: "lanes", What: `lane "b" on "n1" appeared`},
		{Plugin: "lanes", What: `lane "gone" on "n1" is gone`},
		{Plugin: "routes", What: `route of alias "chat" changed: now {"alias":"chat","lane":"a","node":"n2"}, was {"alias":"chat","lane":"cloud"}`},
	}
	if len(ds) != 0 || !reflect.DeepEqual(fleet, want) || !reflect.DeepEqual(drift, wantDrift) {
		t.Errorf("Observe = %+v, %v\nwant %+v\ndrift %q\nwant  %q", fleet, ds, want, drift, wantDrift)
	}

	// A part of a fleet poolc does not know is an error.
	routes.observes = []string{"routes", "gpus"}
	set.Close()
	set, _ = host.Start(context.Background(), pool, host.Options{})
	defer set.Close()
	_, ds = set.Observe(context.Background())
	var got []string
	for _, d := range ds {
		got = append(got, d.Message)
	}
	wantErrs := []string{`plugin "routes" says it observes "gpus", which is not a part of a fleet (nodes, lanes, prefetched, routes, members, images)`}
	if !reflect.DeepEqual(got, wantErrs) {
		t.Errorf("Observe errors = %q\nwant %q", got, wantErrs)
	}
}
