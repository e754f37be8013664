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
// fixed fleet.
type observer struct {
	kinds   []sdk.StepKind
	fleet   sdk.Fleet
	managed []string
}

func (o *observer) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{Name: "observer", Version: "2.0.0", StepKinds: o.kinds}
}

func (o *observer) Configure(context.Context, sdk.ConfigureRequest) sdk.ConfigureResponse {
	return sdk.ConfigureResponse{}
}

func (o *observer) Observe(context.Context, sdk.ObserveRequest) sdk.ObserveResponse {
	return sdk.ObserveResponse{Fleet: o.fleet, Managed: o.managed}
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

// TestReattachAndObserve reattaches to plugins served in this process, and
// merges what they observe.
func TestReattachAndObserve(t *testing.T) {
	lanes := &observer{
		kinds:   []sdk.StepKind{pools.StepStart},
		fleet:   sdk.Fleet{Lanes: []pools.LaneState{{Name: "b", Node: "n1"}, {Name: "a", Node: "n2"}}, Routes: []pools.Route{{Alias: "ignored", Lane: "cloud"}}},
		managed: []string{"lanes"},
	}
	routes := &observer{
		kinds:   []sdk.StepKind{pools.StepRoute},
		fleet:   sdk.Fleet{Routes: []pools.Route{{Alias: "chat", Lane: "a", Node: "n2"}}, Lanes: []pools.LaneState{{Name: "ignored", Node: "n9"}}},
		managed: []string{"routes"},
	}
	env, _ := json.Marshal(map[string]json.RawMessage{
		"lanes":  serveDebug(t, "lanes", lanes),
		"routes": serveDebug(t, "routes", routes),
		"absent": serveDebug(t, "absent", &observer{kinds: []sdk.StepKind{pools.StepStop}}),
	})
	t.Setenv(sdk.ReattachEnv, string(env))

	decls := []pools.Plugin{{Name: "lanes", SHA256: strings.Repeat("0", 64)}, {Name: "routes"}}
	set, ds := host.Start(context.Background(), decls, host.Options{})
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

	fleet, managed, ds := set.Observe(context.Background())
	want := pools.Fleet{
		Nodes:      []pools.NodeState{},
		Lanes:      []pools.LaneState{{Name: "a", Node: "n2"}, {Name: "b", Node: "n1"}},
		Routes:     []pools.Route{{Alias: "chat", Lane: "a", Node: "n2"}},
		Prefetched: []pools.Prefetch{},
		Members:    []pools.MemberState{},
	}
	if len(ds) != 0 || !reflect.DeepEqual(fleet, want) || !reflect.DeepEqual(managed, map[string]bool{"lanes": true, "routes": true}) {
		t.Errorf("Observe = %+v, %v, %v\nwant %+v", fleet, managed, ds, want)
	}

	// Two plugins may not manage one list, nor one poolc does not know.
	routes.managed = []string{"routes", "lanes", "gpus"}
	_, _, ds = set.Observe(context.Background())
	var got []string
	for _, d := range ds {
		got = append(got, d.Message)
	}
	wantErrs := []string{
		`plugins "lanes" and "routes" both say they manage the fleet's lanes; only one may`,
		`plugin "routes" says it manages "gpus", which is not a part of the fleet (nodes, lanes, routes, prefetched, members)`,
	}
	if !reflect.DeepEqual(got, wantErrs) {
		t.Errorf("Observe errors = %q\nwant %q", got, wantErrs)
	}
}
