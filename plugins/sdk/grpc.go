package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"sync"

	"poolc.dev/poolc/plugins/proto/actuatorv3"
)

// The two gRPC adapters: server (an Actuator behind the generated
// ActuatorServer) and client (the generated ActuatorClient behind an
// Actuator). Neither adds meaning of its own beyond what the contract
// promises: panics in the plugin become error diagnostics, Apply refuses
// kinds the plugin did not declare, and progress is never sent after the
// result.

// server serves an Actuator over gRPC.
type server struct {
	actuatorv3.UnimplementedActuatorServer
	impl Actuator

	mu    sync.Mutex
	kinds []StepKind // from the last Describe, nil before the first
}

var _ actuatorv3.ActuatorServer = (*server)(nil)

func newServer(impl Actuator) *server { return &server{impl: impl} }

// protect runs f, turning a panic into an error diagnostic for method.
func protect(method string, f func()) (ds Diagnostics) {
	defer func() {
		if r := recover(); r != nil {
			ds = Diagnostics{{
				Severity: Error,
				Summary:  fmt.Sprintf("plugin panicked in %s: %v", method, r),
				Detail:   string(debug.Stack()),
			}}
		}
	}()
	f()
	return nil
}

func (s *server) describe(ctx context.Context) DescribeResponse {
	var resp DescribeResponse
	if ds := protect("Describe", func() { resp = s.impl.Describe(ctx, DescribeRequest{}) }); ds != nil {
		resp = DescribeResponse{Diagnostics: ds}
	}
	s.mu.Lock()
	s.kinds = slices.Clone(resp.StepKinds)
	if s.kinds == nil {
		s.kinds = []StepKind{}
	}
	s.mu.Unlock()
	return resp
}

// declared returns the step kinds the plugin declares, asking Describe
// when it has not been called yet.
func (s *server) declared(ctx context.Context) []StepKind {
	s.mu.Lock()
	kinds := s.kinds
	s.mu.Unlock()
	if kinds == nil {
		kinds = s.describe(ctx).StepKinds
	}
	return kinds
}

// Describe answers with the plugin's Describe, and remembers the kinds it
// declares for Apply's check.
func (s *server) Describe(ctx context.Context, _ *actuatorv3.DescribeRequest) (*actuatorv3.DescribeResponse, error) {
	resp := s.describe(ctx)
	return &actuatorv3.DescribeResponse{
		Name:         resp.Name,
		Version:      resp.Version,
		StepKinds:    kindsToProto(resp.StepKinds),
		ConfigSchema: resp.ConfigSchema,
		Capabilities: &actuatorv3.Capabilities{Observes: resp.Capabilities.Observes, ApplyObserves: resp.Capabilities.ApplyObserves},
		Diagnostics:  toProto(resp.Diagnostics),
	}, nil
}

// Configure passes the configuration to the plugin.
func (s *server) Configure(ctx context.Context, req *actuatorv3.ConfigureRequest) (*actuatorv3.ConfigureResponse, error) {
	var resp ConfigureResponse
	r := ConfigureRequest{Pool: req.GetPool(), ConfigJSON: req.GetConfigJson(), WorkDir: req.GetWorkDir(), Inventory: inventoryFromProto(req.GetInventory())}
	if ds := protect("Configure", func() { resp = s.impl.Configure(ctx, r) }); ds != nil {
		resp = ConfigureResponse{Diagnostics: ds}
	}
	return &actuatorv3.ConfigureResponse{Diagnostics: toProto(resp.Diagnostics)}, nil
}

// Observe answers with the plugin's fleet.
func (s *server) Observe(ctx context.Context, _ *actuatorv3.ObserveRequest) (*actuatorv3.ObserveResponse, error) {
	var resp ObserveResponse
	if ds := protect("Observe", func() { resp = s.impl.Observe(ctx, ObserveRequest{}) }); ds != nil {
		resp = ObserveResponse{Diagnostics: ds}
	}
	return &actuatorv3.ObserveResponse{Fleet: fleetToProto(&resp.Fleet), Diagnostics: toProto(resp.Diagnostics)}, nil
}

// Apply streams the plugin's progress, unless poolc asked for none, then
// its result.
func (s *server) Apply(req *actuatorv3.ApplyRequest, stream actuatorv3.Actuator_ApplyServer) error {
	ctx := stream.Context()
	send := func(p Progress) error {
		return stream.Send(&actuatorv3.ApplyEvent{Event: &actuatorv3.ApplyEvent_Progress{
			Progress: &actuatorv3.Progress{Message: p.Message, Fraction: p.Fraction, BytesDone: p.BytesDone, BytesTotal: p.BytesTotal},
		}})
	}
	if req.GetNoProgress() {
		send = func(Progress) error { return nil }
	}
	resp := s.apply(ctx, stepFromProto(req.GetStep()), send)
	return stream.Send(&actuatorv3.ApplyEvent{Event: &actuatorv3.ApplyEvent_Result{
		Result: &actuatorv3.Result{Retryable: resp.Retryable, Diagnostics: toProto(resp.Diagnostics), Observed: fleetToProto(resp.Observed)},
	}})
}

// apply checks the step's kind, then runs the plugin's Apply with a
// progress function that sends through send, one report at a time, and
// drops reports made after Apply returned.
func (s *server) apply(ctx context.Context, step Step, send func(Progress) error) ApplyResponse {
	if kinds := s.declared(ctx); !slices.Contains(kinds, step.Kind) {
		return ApplyResponse{Diagnostics: Diagnostics{{
			Severity: Error,
			Summary:  fmt.Sprintf("plugin does not carry out %q steps", step.Kind),
			Detail:   fmt.Sprintf("Step %s has kind %q; the plugin declares %q.", step.ID, step.Kind, kinds),
		}}}
	}
	var (
		mu      sync.Mutex
		done    bool
		sendErr error
	)
	progress := func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		if !done && sendErr == nil {
			sendErr = send(p)
		}
	}
	var resp ApplyResponse
	if ds := protect("Apply", func() { resp = s.impl.Apply(ctx, ApplyRequest{Step: step}, progress) }); ds != nil {
		resp = ApplyResponse{Diagnostics: ds}
	}
	mu.Lock()
	done = true
	mu.Unlock()
	return resp
}

// client is an Actuator that calls a plugin over gRPC.
type client struct {
	rpc    actuatorv3.ActuatorClient
	failed func(method string, err error) Diagnostics
}

var _ Actuator = (*client)(nil)

// Describe asks the plugin who it is.
func (c *client) Describe(ctx context.Context, _ DescribeRequest) DescribeResponse {
	resp, err := c.rpc.Describe(ctx, &actuatorv3.DescribeRequest{})
	if err != nil {
		return DescribeResponse{Diagnostics: c.failed("Describe", err)}
	}
	return DescribeResponse{
		Name:         resp.GetName(),
		Version:      resp.GetVersion(),
		StepKinds:    kindsFromProto(resp.GetStepKinds()),
		ConfigSchema: resp.GetConfigSchema(),
		Capabilities: Capabilities{Observes: resp.GetCapabilities().GetObserves(), ApplyObserves: resp.GetCapabilities().GetApplyObserves()},
		Diagnostics:  fromProto(resp.GetDiagnostics()),
	}
}

// Configure sends the plugin its configuration.
func (c *client) Configure(ctx context.Context, req ConfigureRequest) ConfigureResponse {
	resp, err := c.rpc.Configure(ctx, &actuatorv3.ConfigureRequest{Pool: req.Pool, ConfigJson: req.ConfigJSON, WorkDir: req.WorkDir, Inventory: inventoryToProto(req.Inventory)})
	if err != nil {
		return ConfigureResponse{Diagnostics: c.failed("Configure", err)}
	}
	return ConfigureResponse{Diagnostics: fromProto(resp.GetDiagnostics())}
}

// Observe asks the plugin what it sees and decodes its fleet.
func (c *client) Observe(ctx context.Context, _ ObserveRequest) ObserveResponse {
	resp, err := c.rpc.Observe(ctx, &actuatorv3.ObserveRequest{})
	if err != nil {
		return ObserveResponse{Diagnostics: c.failed("Observe", err)}
	}
	out := ObserveResponse{Diagnostics: fromProto(resp.GetDiagnostics())}
	if f := fleetFromProto(resp.GetFleet()); f != nil {
		out.Fleet = *f
	}
	return out
}

// Apply has the plugin carry out one step, passing its progress reports
// to progress as they arrive. A nil progress asks the plugin for none.
func (c *client) Apply(ctx context.Context, req ApplyRequest, progress ProgressFunc) ApplyResponse {
	// The stream is cancelled when Apply returns, so a plugin that sent a
	// result and then kept the stream open is not waited for.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.rpc.Apply(ctx, &actuatorv3.ApplyRequest{Step: stepToProto(req.Step), NoProgress: progress == nil})
	if err != nil {
		return ApplyResponse{Diagnostics: c.failed("Apply", err)}
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return ApplyResponse{Diagnostics: Errorf(nil, "plugin ended Apply of step "+req.Step.ID+" without a result")}
		}
		if err != nil {
			return ApplyResponse{Diagnostics: c.failed("Apply", err)}
		}
		switch e := ev.GetEvent().(type) {
		case *actuatorv3.ApplyEvent_Progress:
			if progress != nil {
				progress(Progress{Message: e.Progress.GetMessage(), Fraction: e.Progress.GetFraction(), BytesDone: e.Progress.GetBytesDone(), BytesTotal: e.Progress.GetBytesTotal()})
			}
		case *actuatorv3.ApplyEvent_Result:
			return ApplyResponse{Retryable: e.Result.GetRetryable(), Diagnostics: fromProto(e.Result.GetDiagnostics()), Observed: fleetFromProto(e.Result.GetObserved())}
		}
	}
}

func toProto(ds Diagnostics) []*actuatorv3.Diagnostic {
	if len(ds) == 0 {
		return nil
	}
	out := make([]*actuatorv3.Diagnostic, len(ds))
	for i, d := range ds {
		sev := actuatorv3.Severity_SEVERITY_ERROR
		if d.Severity == Warning {
			sev = actuatorv3.Severity_SEVERITY_WARNING
		}
		out[i] = &actuatorv3.Diagnostic{Severity: sev, Summary: d.Summary, Detail: d.Detail, AttributePath: d.Path}
	}
	return out
}

// fromProto reads diagnostics; any severity but warning is an error, so a
// severity left unset or unknown to this poolc still fails the call.
func fromProto(ds []*actuatorv3.Diagnostic) Diagnostics {
	if len(ds) == 0 {
		return nil
	}
	out := make(Diagnostics, len(ds))
	for i, d := range ds {
		sev := Error
		if d.GetSeverity() == actuatorv3.Severity_SEVERITY_WARNING {
			sev = Warning
		}
		out[i] = Diagnostic{Severity: sev, Summary: d.GetSummary(), Detail: d.GetDetail(), Path: d.GetAttributePath()}
	}
	return out
}
