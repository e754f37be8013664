package simactuator

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
)

func configured(t *testing.T, cfg map[string]any) (*Sim, string) {
	t.Helper()
	dir := t.TempDir()
	raw, _ := json.Marshal(cfg)
	s := New("test")
	if resp := s.Configure(context.Background(), sdk.ConfigureRequest{Pool: "lab", ConfigJSON: raw, WorkDir: dir}); resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics)
	}
	return s, dir
}

var lane = pools.LaneState{Name: "chat", Node: "a", Model: "m", Port: 8080, Residency: pools.KeepWarm, MemoryGB: 30}

func start(l pools.LaneState) pools.Step {
	return pools.Step{ID: "start:" + l.Name + "@" + l.Node, Kind: pools.StepStart, Lane: &l}
}

func apply(s *Sim, step pools.Step) runner.Response {
	return s.ApplyStep(context.Background(), step, func(pools.Progress) {})
}

func TestTheWorldPersistsAcrossPluginProcesses(t *testing.T) {
	s, dir := configured(t, nil)
	if resp := apply(s, start(lane)); resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics)
	}
	route := pools.Step{ID: "route:chat", Kind: pools.StepRoute, Route: &pools.Route{Alias: "chat", Lane: "chat", Node: "a"}}
	if resp := apply(s, route); resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics)
	}
	again := New("test")
	again.Configure(context.Background(), sdk.ConfigureRequest{WorkDir: dir, Inventory: sdk.Inventory{Nodes: []sdk.Node{{Name: "a"}}, Gateway: true}})
	obs := again.Observe(context.Background(), sdk.ObserveRequest{})
	if len(obs.Fleet.Lanes) != 1 || !obs.Fleet.Lanes[0].Loaded || len(obs.Fleet.Routes) != 1 {
		t.Fatalf("observed %+v", obs.Fleet)
	}
	w, _, err := OpenWorld(filepath.Join(dir, ".poolc", "sim-world.json"))
	if err != nil || w.Starts["chat@a"] != 1 || w.ClockSeconds != 17 {
		t.Fatalf("world %+v %v", w, err)
	}
}

func TestWhatHardwareWouldPunishIsRefusedAndRecorded(t *testing.T) {
	s, _ := configured(t, map[string]any{"world": ":memory:"})
	apply(s, start(lane))
	resp := apply(s, start(lane))
	if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics[0].Message, "already running on a") {
		t.Fatalf("double start: %+v", resp)
	}
	resp = apply(s, pools.Step{ID: "route:x", Kind: pools.StepRoute, Route: &pools.Route{Alias: "x", Lane: "ghost", Node: "a"}})
	if !resp.Diagnostics.HasErrors() {
		t.Fatal("routing to a lane that is not running succeeded")
	}
	if len(s.world.Violations) != 2 {
		t.Fatalf("violations: %v", s.world.Violations)
	}
}

func TestInjectedFaults(t *testing.T) {
	s, _ := configured(t, map[string]any{"world": ":memory:", "fail": []string{"start:*@b"}, "flaky": []string{"prefetch:*"}})
	resp := apply(s, start(pools.LaneState{Name: "x", Node: "b", Residency: pools.OnDemand}))
	if !resp.Diagnostics.HasErrors() || resp.Retryable {
		t.Fatalf("fail: %+v", resp)
	}
	pf := pools.Step{ID: "prefetch:m@a", Kind: pools.StepPrefetch, Prefetch: &pools.Prefetch{Node: "a", Model: "m", SizeGB: 1}}
	if resp := apply(s, pf); !resp.Retryable {
		t.Fatalf("flaky first attempt: %+v", resp)
	}
	if resp := apply(s, pf); resp.Diagnostics.HasErrors() {
		t.Fatalf("flaky second attempt: %+v", resp)
	}
}

func TestScaledTimeHonoursCancellation(t *testing.T) {
	s, _ := configured(t, map[string]any{"world": ":memory:", "time_scale": 10})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	begin := time.Now()
	resp := s.ApplyStep(ctx, start(lane), func(pools.Progress) {})
	if !resp.Diagnostics.HasErrors() || time.Since(begin) > 5*time.Second {
		t.Fatalf("cancelled step: %+v after %v", resp, time.Since(begin))
	}
	if obs := s.Observe(context.Background(), sdk.ObserveRequest{}); len(obs.Fleet.Lanes) != 0 {
		t.Fatal("a cancelled start left a lane running")
	}
}

func TestBadConfigurationIsReported(t *testing.T) {
	s := New("test")
	resp := s.Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{"wrold": "x"}`)})
	if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics[0].Summary, `unknown field "wrold"`) {
		t.Fatalf("%+v", resp)
	}
}

// A lane replaced on its node runs a second process there on another
// port, from other weights; the sim refuses what the hardware would not
// survive: a second process on a taken port, and new weights copied over
// the file a running process has mapped. After the old process stops the
// node serves only the new one.
func TestAReplacementOnTheSameNodeRunsBesideTheOld(t *testing.T) {
	s, _ := configured(t, map[string]any{"world": ":memory:"})
	old := lane
	old.Path, old.SHA256 = "/m/chat.gguf", "1111"
	if resp := apply(s, start(old)); resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics)
	}
	over := pools.Step{ID: "prefetch:m@a", Kind: pools.StepPrefetch, Prefetch: &pools.Prefetch{Node: "a", Model: "m", Path: old.Path, SHA256: "2222", SizeGB: 1}}
	if resp := apply(s, over); !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics[0].Message, "are mapped by lane chat on port 8080") {
		t.Fatalf("prefetch over a mapped file: %+v", resp)
	}
	clash := old
	clash.Name = "other"
	if resp := apply(s, start(clash)); !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics[0].Message, "lane chat listens there") {
		t.Fatalf("start on a taken port: %+v", resp)
	}
	staged := *over.Prefetch
	staged.Path = "/m/chat.sha-2222.gguf"
	if resp := apply(s, pools.Step{ID: "prefetch:m@a", Kind: pools.StepPrefetch, Prefetch: &staged}); resp.Diagnostics.HasErrors() {
		t.Fatal(resp.Diagnostics)
	}
	next := old
	next.Port, next.Path, next.SHA256 = 8082, staged.Path, staged.SHA256
	resp := apply(s, pools.Step{ID: "start:chat@a:8082", Kind: pools.StepStart, Lane: &next})
	if resp.Diagnostics.HasErrors() || len(resp.Observed.Lanes) != 1 || resp.Observed.Lanes[0].Port != 8082 || resp.Observed.Lanes[0].SHA256 != "2222" {
		t.Fatalf("second process: %+v", resp)
	}
	route := pools.Step{ID: "route:chat", Kind: pools.StepRoute, Route: &pools.Route{Alias: "chat", Lane: "chat", Node: "a", Port: 8082}}
	if resp := apply(s, route); resp.Diagnostics.HasErrors() || resp.Observed.Routes[0].Port != 8082 {
		t.Fatalf("route to the new process: %+v", resp)
	}
	for _, k := range []pools.StepKind{pools.StepDrain, pools.StepStop} {
		if resp := apply(s, pools.Step{ID: string(k) + ":chat@a", Kind: k, Lane: &old}); resp.Diagnostics.HasErrors() {
			t.Fatal(resp.Diagnostics)
		}
	}
	obs := s.Observe(context.Background(), sdk.ObserveRequest{})
	if len(obs.Fleet.Lanes) != 1 || obs.Fleet.Lanes[0].Port != 8082 || obs.Fleet.Lanes[0].Model.SHA256 != "2222" {
		t.Fatalf("observed %+v", obs.Fleet.Lanes)
	}
	if len(s.world.Violations) != 2 || len(s.world.Interruptions) != 0 {
		t.Fatalf("violations %v, interruptions %v", s.world.Violations, s.world.Interruptions)
	}
}
