// Package sdktest checks that an actuator plugin keeps the contract poolc
// relies on. Run it from the plugin's own tests, in process:
//
//	func TestConformance(t *testing.T) { sdktest.Conformance(t, &webhook{}) }
//
// or against a built binary, in any language, that speaks the protocol:
//
//	func TestBinary(t *testing.T) { sdktest.ConformanceBinary(t, "./poolc-plugin-webhook") }
//
// The checks, each a subtest: Describe gives a name, a version and at
// least one step kind; Configure with "{}" and with JSON that does not
// parse answers (the latter with an error) without panicking or hanging;
// Observe answers, and each target it says it could not observe has a
// kind, the fields naming it and a cause; Apply of a kind the
// plugin did not declare is an error;
// Apply returns within a few seconds of its context being cancelled; and
// progress arrives in order, before the result.
//
// The plugin is never configured successfully, since the checks do not
// know a valid configuration: a plugin may answer Observe and Apply with
// "not configured" errors, but must answer.
package sdktest

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"poolc.dev/poolc/plugins/sdk"
)

// Limits of the checks: how long any call may take, and how soon Apply
// must return once cancelled.
const (
	callLimit   = 10 * time.Second
	cancelLimit = 3 * time.Second
)

// Conformance runs the checks against impl, served in this process over a
// real gRPC connection, so the adapters and the wire format take part.
// Besides what ConformanceBinary can see, it checks on the plugin's side
// that Apply itself returned after cancellation, and that progress reached
// poolc in the order the plugin reported it.
func Conformance(t *testing.T, impl sdk.Actuator) {
	t.Helper()
	rec := &recorder{Actuator: impl}
	// Closing the client stops the server too (go-plugin's Shutdown).
	client, _ := plugin.TestPluginGRPCConn(t, false, plugin.PluginSet{sdk.PluginName: &sdk.GRPCPlugin{Impl: rec}})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(sdk.PluginName)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	run(t, raw.(sdk.Actuator), rec)
}

// ConformanceBinary runs the checks against the plugin binary at path,
// started as poolc starts plugins (handshake, mutual TLS). The plugin's
// output goes to the test log.
func ConformanceBinary(t *testing.T, path string) {
	t.Helper()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  sdk.Handshake,
		Plugins:          plugin.PluginSet{sdk.PluginName: &sdk.GRPCPlugin{}},
		Cmd:              exec.Command(path),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.NewNullLogger(),
		SyncStderr:       logWriter{t},
		SyncStdout:       logWriter{t},
		StartTimeout:     callLimit,
	})
	t.Cleanup(client.Kill)
	conn, err := client.Client()
	if err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	if err := within(t, "the health check", callLimit, conn.Ping); err != nil {
		t.Fatalf("%s does not serve the gRPC health service as %q: %v", path, plugin.GRPCServiceName, err)
	}
	raw, err := conn.Dispense(sdk.PluginName)
	if err != nil {
		t.Fatalf("dispense: %v", err)
	}
	run(t, raw.(sdk.Actuator), nil)
}

// logWriter sends a plugin's output to the test log.
type logWriter struct{ t *testing.T }

// Write logs p, one call per write.
func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// recorder wraps the plugin's own Actuator, on the plugin side of the
// connection, to see what the client cannot: when Apply returns and what
// progress the plugin reported.
type recorder struct {
	sdk.Actuator

	mu       sync.Mutex
	sent     []sdk.Progress
	returned chan struct{} // closed when the Apply in flight returns
}

// Apply runs the plugin's Apply, recording its progress and its return.
func (r *recorder) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	r.mu.Lock()
	r.sent = nil
	returned := make(chan struct{})
	r.returned = returned
	r.mu.Unlock()
	defer close(returned)
	return r.Actuator.Apply(ctx, req, func(p sdk.Progress) {
		r.mu.Lock()
		r.sent = append(r.sent, p)
		r.mu.Unlock()
		progress(p)
	})
}

// lastApply returns what the plugin reported during the last Apply, and a
// channel closed when that Apply returned.
func (r *recorder) lastApply() ([]sdk.Progress, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent), r.returned
}

// within runs f and fails the test when it takes longer than limit; f is
// then left running, since a hung plugin cannot be stopped from here.
func within[T any](t *testing.T, what string, limit time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(limit):
		t.Fatalf("%s did not return within %s", what, limit)
		panic("unreachable")
	}
}

// noCrash fails the test for diagnostics that say the plugin panicked or
// stopped answering, rather than reporting a finding.
func noCrash(t *testing.T, what string, ds sdk.Diagnostics) {
	t.Helper()
	for _, d := range ds {
		if strings.HasPrefix(d.Summary, "plugin panicked") || strings.Contains(d.Summary, "did not respond") || strings.Contains(d.Summary, "failed "+what) {
			t.Errorf("%s: %s\n%s", what, d.Summary, d.Detail)
		}
	}
}

// run is the checks, against act; rec is nil for a binary.
func run(t *testing.T, act sdk.Actuator, rec *recorder) {
	var kinds []sdk.StepKind
	ctx := context.Background()

	t.Run("Describe", func(t *testing.T) {
		resp := within(t, "Describe", callLimit, func() sdk.DescribeResponse { return act.Describe(ctx, sdk.DescribeRequest{}) })
		noCrash(t, "Describe", resp.Diagnostics)
		if resp.Diagnostics.HasErrors() {
			t.Errorf("Describe reported errors: %v", resp.Diagnostics)
		}
		if resp.Name == "" {
			t.Error("Describe gave no name")
		}
		if resp.Version == "" {
			t.Error("Describe gave no version")
		}
		if len(resp.StepKinds) == 0 {
			t.Error("Describe declared no step kinds")
		}
		kinds = resp.StepKinds
		known := []string{sdk.ObserveNodes, sdk.ObserveLanes, sdk.ObservePrefetched, sdk.ObserveRoutes, sdk.ObserveMembers, sdk.ObserveImages}
		for _, part := range resp.Capabilities.Observes {
			if !slices.Contains(known, part) {
				t.Errorf("Describe says the plugin observes %q, which is not a part of a fleet (%s)", part, strings.Join(known, ", "))
			}
		}
	})

	t.Run("Configure", func(t *testing.T) {
		for _, cfg := range []string{`{}`, `{"url": `, `not json at all`} {
			resp := within(t, "Configure "+cfg, callLimit, func() sdk.ConfigureResponse {
				return act.Configure(ctx, sdk.ConfigureRequest{Pool: "conformance", ConfigJSON: []byte(cfg), WorkDir: t.TempDir()})
			})
			noCrash(t, "Configure", resp.Diagnostics)
			if cfg != `{}` && !resp.Diagnostics.HasErrors() {
				t.Errorf("Configure accepted config that is not JSON: %s", cfg)
			}
		}
	})

	t.Run("Observe", func(t *testing.T) {
		resp := within(t, "Observe", callLimit, func() sdk.ObserveResponse { return act.Observe(ctx, sdk.ObserveRequest{}) })
		noCrash(t, "Observe", resp.Diagnostics)
		checkUnobserved(t, resp.Fleet.Unobserved)
	})

	t.Run("ApplyUndeclaredKind", func(t *testing.T) {
		step := sdk.Step{ID: "conformance-undeclared", Kind: "poolc-conformance-undeclared", Target: "nothing"}
		resp := within(t, "Apply", callLimit, func() sdk.ApplyResponse { return act.Apply(ctx, sdk.ApplyRequest{Step: step}, nil) })
		noCrash(t, "Apply", resp.Diagnostics)
		if !resp.Diagnostics.HasErrors() {
			t.Errorf("Apply of undeclared kind %q succeeded", step.Kind)
		}
	})

	for _, kind := range kinds {
		t.Run("Apply/"+string(kind), func(t *testing.T) {
			checkApply(t, act, rec, kind)
		})
	}
}

// checkUnobserved checks what Observe says it could not observe: each
// entry names a kind of target with the fields that kind needs, and one
// of the causes.
func checkUnobserved(t *testing.T, unobs []sdk.Unobserved) {
	for _, u := range unobs {
		switch u.Kind {
		case sdk.TargetNode:
			if u.Name == "" {
				t.Errorf("Observe reports an unobserved node without a name: %+v", u)
			}
		case sdk.TargetMember, sdk.TargetRegistry:
			if u.PodPool == "" || u.Context == "" {
				t.Errorf("Observe reports an unobserved %s without its pod_pool and context: %+v", u.Kind, u)
			}
		case sdk.TargetGateway:
		default:
			t.Errorf("Observe reports an unobserved target of kind %q, not node, gateway, member or registry", u.Kind)
		}
		if !slices.Contains(sdk.Causes(), u.Cause) {
			t.Errorf("Observe reports cause %q, not one of %v", u.Cause, sdk.Causes())
		}
	}
}

// checkApply applies a step of kind, cancels it after a moment, and checks
// that it returns in time and that its progress kept the contract.
func checkApply(t *testing.T, act sdk.Actuator, rec *recorder, kind sdk.StepKind) {
	var (
		mu       sync.Mutex
		got      []sdk.Progress
		returned bool
		late     []sdk.Progress
	)
	progress := func(p sdk.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if returned {
			late = append(late, p)
			return
		}
		got = append(got, p)
	}
	step := Sample(kind)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	resp := within(t, "Apply "+string(kind)+" after cancel", cancelLimit+100*time.Millisecond, func() sdk.ApplyResponse {
		r := act.Apply(ctx, sdk.ApplyRequest{Step: step}, progress)
		mu.Lock()
		returned = true
		mu.Unlock()
		return r
	})
	cancel()
	noCrash(t, "Apply", resp.Diagnostics)
	time.Sleep(50 * time.Millisecond) // let a late report show itself
	mu.Lock()
	defer mu.Unlock()
	if len(late) > 0 {
		t.Errorf("%d progress reports arrived after Apply returned: %v", len(late), late)
	}
	for _, p := range got {
		if p.Fraction != -1 && (p.Fraction < 0 || p.Fraction > 1) {
			t.Errorf("progress %q has fraction %v; want 0..1, or -1 for unknown", p.Message, p.Fraction)
		}
	}
	if rec == nil {
		return
	}
	_, done := rec.lastApply()
	if done == nil {
		t.Fatalf("Apply of %s never reached the plugin", kind)
	}
	select {
	case <-done:
	case <-time.After(cancelLimit):
		t.Fatalf("the plugin's Apply of %s was still running %s after its context was cancelled", kind, cancelLimit)
	}
	sent, _ := rec.lastApply()
	if !slices.Equal(got, sent[:min(len(got), len(sent))]) {
		t.Errorf("progress arrived as %v; the plugin reported %v", got, sent)
	}
}

// Sample is a well-formed step of the kind, with the detail a real plan
// gives it (a lane on a node reached over SSH, a model with its source
// and digest, a route between two endpoints, a member with its registry),
// pointing at nothing that exists: for a plugin's own tests, and what the
// checks apply.
func Sample(kind sdk.StepKind) sdk.Step {
	node := sdk.Node{Name: "conformance-node", Address: "127.0.0.1", SSHUser: "poolc", SSHPort: 22, MemoryGB: 64, BudgetGB: 56}
	model := sdk.Model{Name: "conformance-model", Path: "/var/lib/poolc/models/conformance.gguf", Source: "https://models.invalid/conformance.gguf",
		SHA256: strings.Repeat("0", 64), SizeGB: 1, MemoryGB: 2}
	lane := &sdk.Lane{Name: "conformance-lane", Node: node, Model: model, Port: 18080, Aliases: []string{"conformance"}, Residency: sdk.KeepWarm}
	member := sdk.Member{PodPool: "conformance", Context: "conformance-context", SSHHost: "127.0.0.1", Capacity: 1,
		Registry: "conformance-registry:5000", Namespace: "conformance"}
	step := sdk.Step{ID: "conformance-" + string(kind), Kind: kind, Target: "conformance", Reason: "sdktest"}
	switch kind {
	case sdk.KindStart, sdk.KindDrain, sdk.KindStop:
		step.Lane = lane
	case sdk.KindResidency:
		step.Lane, step.From = lane, sdk.OnDemand
	case sdk.KindPrefetch:
		step.Prefetch = &sdk.Prefetch{Node: node, Model: model}
	case sdk.KindRoute:
		step.Route = &sdk.RouteChange{Alias: "conformance", From: &sdk.LaneEndpoint{Lane: sdk.Cloud},
			To: &sdk.LaneEndpoint{Lane: lane.Name, Node: node.Name, Address: node.Address, Port: lane.Port}}
	case sdk.KindMemberEnsure, sdk.KindMemberRemove:
		step.Member = &member
	case sdk.KindImageSync:
		step.ImageSync = &sdk.ImageSync{Member: member, Image: "conformance/image:v1", Digest: "sha256:" + strings.Repeat("0", 64)}
	}
	return step
}
