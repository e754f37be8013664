package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"poolc.dev/poolc/plugins/proto/actuatorv3"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/plugins/sdk/sdktest"
)

// fake is an actuator whose answers the tests choose. Apply of a "stop"
// step blocks until its context is cancelled; a step whose target is
// "panic" panics.
type fake struct {
	configured chan sdk.ConfigureRequest
	applied    chan sdk.Step
	cancelled  chan struct{}
	progress   chan sdk.ProgressFunc // of each Apply that gets to report
}

func newFake() *fake {
	return &fake{
		configured: make(chan sdk.ConfigureRequest, 10),
		applied:    make(chan sdk.Step, 10),
		cancelled:  make(chan struct{}, 10),
		progress:   make(chan sdk.ProgressFunc, 10),
	}
}

func (f *fake) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{
		Name:         "fake",
		Version:      "1.2.3",
		StepKinds:    []sdk.StepKind{sdk.KindStart, sdk.KindResidency, sdk.KindStop, sdk.KindDrain},
		Capabilities: sdk.Capabilities{Observes: []string{sdk.ObserveLanes, sdk.ObserveRoutes}, ApplyObserves: true},
		ConfigSchema: "url: string",
		Diagnostics:  sdk.Diagnostics{{Severity: sdk.Warning, Summary: "fake is fake", Detail: "only for tests"}},
	}
}

func (f *fake) Configure(_ context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	f.configured <- req
	var cfg map[string]any
	if err := json.Unmarshal(req.ConfigJSON, &cfg); err != nil {
		return sdk.ConfigureResponse{Diagnostics: sdk.Errorf(nil, "config is not JSON: "+err.Error())}
	}
	if _, ok := cfg["url"].(string); !ok {
		return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"url"}, "url is required")}
	}
	return sdk.ConfigureResponse{Diagnostics: sdk.Diagnostics{{Severity: sdk.Warning, Summary: "header is odd", Path: []string{"headers", "X-Odd"}}}}
}

func (f *fake) Observe(context.Context, sdk.ObserveRequest) sdk.ObserveResponse {
	return sdk.ObserveResponse{
		Fleet: sdk.Fleet{
			Nodes:      []sdk.NodeStatus{{Name: "n1", MemoryTotalGB: 128, MemoryFreeGB: 90}},
			Lanes:      []sdk.Lane{{Name: "chat", Node: node, Model: model, Port: 8081, Aliases: []string{"chat"}, Residency: sdk.KeepWarm, Loaded: true}},
			Routes:     []sdk.Route{{Alias: "chat", Lane: sdk.LaneEndpoint{Lane: "chat", Node: "n1", Address: "n1.lan", Port: 8081}}},
			Prefetched: []sdk.Prefetched{{Node: "n1", Model: model}},
			Members:    []sdk.Member{member},
			Images:     []sdk.MemberImage{{PodPool: "jobs", Context: "k3d-a", Image: "img:1", Digest: "sha256:" + strings.Repeat("cd", 32), MissingBytes: 12_400_000}},
			Unobserved: []sdk.Unobserved{{Kind: sdk.TargetNode, Name: "n2", Cause: sdk.CauseHostKeyChanged, Detail: "host key of n2.lan:22 has CHANGED"},
				{Kind: sdk.TargetRegistry, PodPool: "jobs", Context: "k3d-b", Cause: sdk.CauseTimeout}},
		},
	}
}

func (f *fake) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	f.applied <- req.Step
	switch req.Step.Kind {
	case sdk.KindStop:
		progress(sdk.Progress{Message: "stopping", Fraction: -1})
		<-ctx.Done()
		f.cancelled <- struct{}{}
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, "cancelled")}
	}
	if req.Step.Target == "panic" {
		panic("target is broken")
	}
	for i := range 5 {
		progress(sdk.Progress{Message: fmt.Sprintf("part %d", i), Fraction: float64(i) / 5, BytesDone: int64(i) << 20, BytesTotal: 5 << 20})
	}
	f.progress <- progress
	return sdk.ApplyResponse{Retryable: true, Diagnostics: sdk.Diagnostics{{Severity: sdk.Error, Summary: "busy", Path: []string{"url"}}},
		Observed: &sdk.Fleet{Lanes: []sdk.Lane{*req.Step.Lane}}}
}

// The detail a step and an inventory carry, every field set, so the round
// trips show that none is lost on the wire.
var (
	node   = sdk.Node{Name: "n1", Address: "n1.lan", SSHUser: "ops", SSHPort: 2222, KubeContext: "k3d-n1", MemoryGB: 128, BudgetGB: 120, Labels: map[string]string{"gpu": "gb10"}}
	model  = sdk.Model{Name: "m", Path: "/models/m.gguf", Source: "https://models.example/m.gguf", SHA256: strings.Repeat("ab", 32), SizeGB: 17, MemoryGB: 30, Args: []string{"--ctx-size", "8192"}}
	member = sdk.Member{PodPool: "jobs", Context: "k3d-a", Priority: 1, SSHHost: "a.lan", Capacity: 4, Registry: "registry.a:5000", Namespace: "jobs", PodMemoryGB: 2, Image: "img@sha256:" + strings.Repeat("cd", 32)}
)

// connect serves impl over a real gRPC connection and returns the client
// side Actuator.
func connect(t *testing.T, impl sdk.Actuator) sdk.Actuator {
	t.Helper()
	// Closing the client stops the server too (go-plugin's Shutdown).
	client, _ := plugin.TestPluginGRPCConn(t, false, plugin.PluginSet{sdk.PluginName: &sdk.GRPCPlugin{Impl: impl}})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(sdk.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(sdk.Actuator)
}

func TestDescribeRoundTrip(t *testing.T) {
	act := connect(t, newFake())
	got := act.Describe(context.Background(), sdk.DescribeRequest{})
	want := newFake().Describe(context.Background(), sdk.DescribeRequest{})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Describe = %+v\nwant %+v", got, want)
	}
}

func TestConfigureRoundTrip(t *testing.T) {
	f := newFake()
	act := connect(t, f)
	req := sdk.ConfigureRequest{Pool: "lab", ConfigJSON: []byte(`{"url":"http://x"}`), WorkDir: "/etc/pools", Inventory: sdk.Inventory{
		Nodes: []sdk.Node{node}, Models: []sdk.Model{model},
		Lanes:   []sdk.LaneSpec{{Name: "chat", Model: "m", Port: 8081, Aliases: []string{"chat", "default"}, Residency: sdk.Preferred}},
		Gateway: true, Aliases: []sdk.AliasSpec{{Name: "chat", Lane: "chat", Fallbacks: []string{"cloud"}}},
		Members: []sdk.Member{member}, GatewayNodes: []sdk.Node{node, {Name: "b", Address: "10.0.0.2"}},
	}}
	resp := act.Configure(context.Background(), req)
	if got := <-f.configured; !reflect.DeepEqual(got, req) {
		t.Errorf("plugin got %+v, want %+v", got, req)
	}
	want := sdk.Diagnostics{{Severity: sdk.Warning, Summary: "header is odd", Path: []string{"headers", "X-Odd"}}}
	if !reflect.DeepEqual(resp.Diagnostics, want) {
		t.Errorf("diagnostics = %+v, want %+v", resp.Diagnostics, want)
	}
	resp = act.Configure(context.Background(), sdk.ConfigureRequest{ConfigJSON: []byte(`{}`)})
	if want := sdk.Errorf([]string{"url"}, "url is required"); !reflect.DeepEqual(resp.Diagnostics, want) {
		t.Errorf("diagnostics = %+v, want %+v", resp.Diagnostics, want)
	}
}

func TestObserveRoundTrip(t *testing.T) {
	act := connect(t, newFake())
	got := act.Observe(context.Background(), sdk.ObserveRequest{})
	want := newFake().Observe(context.Background(), sdk.ObserveRequest{})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Observe = %+v\nwant %+v", got, want)
	}
}

func TestApplyStreamsProgressInOrder(t *testing.T) {
	f := newFake()
	act := connect(t, f)
	step := sdk.Step{
		ID: "start-chat@n1", Kind: sdk.KindResidency, Target: "chat", Reason: "new lane", From: sdk.OnDemand,
		Lane: &sdk.Lane{Name: "chat", Node: node, Model: model, Port: 8081, Aliases: []string{"chat"}, Residency: sdk.KeepWarm},
	}
	var got []string
	resp := act.Apply(context.Background(), sdk.ApplyRequest{Step: step}, func(p sdk.Progress) {
		got = append(got, fmt.Sprintf("%s %.1f %d/%d", p.Message, p.Fraction, p.BytesDone, p.BytesTotal))
	})
	if sent := <-f.applied; !reflect.DeepEqual(sent, step) {
		t.Errorf("plugin got step %+v\nwant %+v", sent, step)
	}
	// A report made after Apply returned is dropped, not sent.
	(<-f.progress)(sdk.Progress{Message: "too late"})
	want := []string{"part 0 0.0 0/5242880", "part 1 0.2 1048576/5242880", "part 2 0.4 2097152/5242880", "part 3 0.6 3145728/5242880", "part 4 0.8 4194304/5242880"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("progress = %q, want %q", got, want)
	}
	wantResp := sdk.ApplyResponse{Retryable: true, Diagnostics: sdk.Diagnostics{{Severity: sdk.Error, Summary: "busy", Path: []string{"url"}}},
		Observed: &sdk.Fleet{Lanes: []sdk.Lane{*step.Lane}}}
	if !reflect.DeepEqual(resp, wantResp) {
		t.Errorf("Apply = %+v, want %+v", resp, wantResp)
	}
}

func TestApplyCancel(t *testing.T) {
	f := newFake()
	act := connect(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan sdk.ApplyResponse)
	go func() {
		done <- act.Apply(ctx, sdk.ApplyRequest{Step: sdk.Step{ID: "stop-chat@n1", Kind: sdk.KindStop, Lane: &sdk.Lane{Name: "chat", Node: node}}}, func(sdk.Progress) { close(started) })
	}()
	<-started
	cancel()
	select {
	case resp := <-done:
		if len(resp.Diagnostics) != 1 || resp.Diagnostics[0].Summary != "plugin: Apply cancelled" || resp.Retryable {
			t.Errorf("Apply after cancel = %+v", resp)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Apply did not return after cancel")
	}
	select {
	case <-f.cancelled:
	case <-time.After(30 * time.Second):
		t.Fatal("the plugin's context was not cancelled")
	}
}

func TestApplyRefusesUndeclaredKind(t *testing.T) {
	f := newFake()
	act := connect(t, f)
	resp := act.Apply(context.Background(), sdk.ApplyRequest{Step: sdk.Step{ID: "route-chat", Kind: sdk.KindRoute, Route: &sdk.RouteChange{Alias: "chat", From: &sdk.LaneEndpoint{Lane: "cloud"}, To: &sdk.LaneEndpoint{Lane: "chat", Node: "n1", Address: "n1.lan", Port: 8081}}}}, nil)
	if !resp.Diagnostics.HasErrors() || !strings.Contains(resp.Diagnostics[0].Summary, `does not carry out "route" steps`) {
		t.Errorf("Apply = %+v", resp)
	}
	if len(f.applied) != 0 {
		t.Error("the plugin was asked to apply an undeclared kind")
	}
}

func TestApplyPanicBecomesDiagnostic(t *testing.T) {
	act := connect(t, newFake())
	resp := act.Apply(context.Background(), sdk.ApplyRequest{Step: sdk.Step{ID: "drain-chat@n1", Kind: sdk.KindDrain, Target: "panic", Lane: &sdk.Lane{Name: "chat", Node: node}}}, nil)
	if len(resp.Diagnostics) != 1 || resp.Diagnostics[0].Summary != "plugin panicked in Apply: target is broken" {
		t.Fatalf("Apply = %+v", resp)
	}
	if !strings.Contains(resp.Diagnostics[0].Detail, "goroutine") {
		t.Errorf("detail has no stack: %q", resp.Diagnostics[0].Detail)
	}
	// The plugin still answers.
	if got := act.Describe(context.Background(), sdk.DescribeRequest{}); got.Name != "fake" {
		t.Errorf("Describe after panic = %+v", got)
	}
}

func TestCallFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{status.Error(codes.Unavailable, "error reading from server: EOF"), "plugin hook did not respond: connection lost"},
		{status.Error(codes.DeadlineExceeded, "x"), "plugin hook did not respond: Apply timed out"},
		{context.DeadlineExceeded, "plugin hook did not respond: Apply timed out"},
		{status.Error(codes.Canceled, "x"), "plugin hook: Apply cancelled"},
		{fmt.Errorf("wrapped: %w", context.Canceled), "plugin hook: Apply cancelled"},
		{status.Error(codes.Unimplemented, "unknown method"), "plugin hook does not implement Apply"},
		{status.Error(codes.Internal, "boom"), "plugin hook failed Apply: boom"},
		{errors.New("plain"), "plugin hook failed Apply: plain"},
	} {
		d := sdk.CallFailure("hook", "Apply", tc.err)
		if d.Summary != tc.want || d.Severity != sdk.Error || d.Detail == "" {
			t.Errorf("CallFailure(%v) = %+v, want summary %q", tc.err, d, tc.want)
		}
	}
}

// TestConformanceOfFake runs the third-party checks on the fake, which
// keeps the contract.
func TestConformanceOfFake(t *testing.T) {
	sdktest.Conformance(t, newFake())
}

// A call that asks for no progress gets its result alone: the plugin's
// reports are not sent.
func TestApplyWithoutProgressSendsOnlyTheResult(t *testing.T) {
	client, _ := plugin.TestPluginGRPCConn(t, false, plugin.PluginSet{sdk.PluginName: &sdk.GRPCPlugin{Impl: newFake()}})
	t.Cleanup(func() { _ = client.Close() })
	rpc := actuatorv3.NewActuatorClient(client.Conn)
	step := &actuatorv3.Step{Id: "start:chat@n1", Kind: string(sdk.KindStart), Target: "chat",
		Detail: &actuatorv3.Step_Lane{Lane: &actuatorv3.LaneStep{Lane: &actuatorv3.Lane{Name: "chat", Node: &actuatorv3.Node{Name: "n1"}, Port: 8081}}}}
	for _, noProgress := range []bool{false, true} {
		stream, err := rpc.Apply(context.Background(), &actuatorv3.ApplyRequest{Step: step, NoProgress: noProgress})
		if err != nil {
			t.Fatal(err)
		}
		progress, results := 0, 0
		for {
			ev, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetProgress() != nil {
				progress++
			}
			if ev.GetResult() != nil {
				results++
			}
		}
		want := 5
		if noProgress {
			want = 0
		}
		if progress != want || results != 1 {
			t.Errorf("no_progress %v: %d progress events and %d results, want %d and 1", noProgress, progress, results, want)
		}
	}
}
