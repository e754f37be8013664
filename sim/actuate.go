package sim

import (
	"context"
	"fmt"

	"poolc.dev/poolc/plugins/sdk"
	simplugin "poolc.dev/poolc/plugins/sim"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
	"poolc.dev/poolc/runner/store"
)

// actuate applies a plan through the real runner against an in-process
// sim actuator (world in memory, virtual time) whose world is set to the
// plan's current fleet first. The runner takes one step at a time, so the
// outcome does not depend on goroutine scheduling. A step fails as the
// hardware would make it fail: on a node that does not answer, a prefetch
// to a full disk, the start of a lane the guard latched.
func (w *world) actuate(p *pools.Plan) (runner.Result, error) {
	ctx := context.Background()
	act := simplugin.New("sim")
	cfg := []byte(`{"world": ":memory:", "time_scale": 0}`)
	if resp := act.Configure(ctx, sdk.ConfigureRequest{Pool: p.Pool, ConfigJSON: cfg}); resp.Diagnostics.HasErrors() {
		return runner.Result{}, fmt.Errorf("configuring the sim actuator: %s", resp.Diagnostics[0].Summary)
	}
	for _, s := range seed(p.Before) {
		if resp := act.Apply(ctx, sdk.ApplyRequest{Step: s}, func(sdk.Progress) {}); resp.Diagnostics.HasErrors() {
			return runner.Result{}, fmt.Errorf("setting up the sim actuator's world (%s): %s", s.ID, resp.Diagnostics[0].Summary)
		}
	}
	st := &pools.State{FormatVersion: pools.StateFormatVersion, Pool: p.Pool, Fleet: p.Before.Clone()}
	acts := &actuators{w: w, sim: act}
	return runner.Run(ctx, p, st, acts, nopRecorder{}, runner.Options{Parallelism: 1, Retries: -1}), nil
}

// seed lists the steps that build a fleet from nothing: its weights, its
// lanes, the routes to lanes it runs (or to the cloud), its members.
func seed(f pools.Fleet) []pools.Step {
	var steps []pools.Step
	for _, pf := range f.Prefetched {
		steps = append(steps, pools.Step{ID: "seed:prefetch", Kind: pools.StepPrefetch, Prefetch: &pf})
	}
	for _, l := range f.Lanes {
		steps = append(steps, pools.Step{ID: "seed:start", Kind: pools.StepStart, Lane: &l})
	}
	for _, r := range f.Routes {
		if r.Lane == pools.Cloud || f.Lane(r.Lane, r.Node) != nil {
			steps = append(steps, pools.Step{ID: "seed:route", Kind: pools.StepRoute, Route: &r})
		}
	}
	for _, m := range f.Members {
		steps = append(steps, pools.Step{ID: "seed:member", Kind: pools.StepMemberEnsure, Member: &m})
	}
	return steps
}

// actuators hands every step to the sim actuator, failing first those
// the modelled hardware cannot carry out.
type actuators struct {
	w   *world
	sim *simplugin.Sim
}

// For returns the one actuator, for every kind.
func (a *actuators) For(pools.StepKind) (sdk.Actuator, string, bool) { return a, "sim", true }

// Describe is the sim actuator's.
func (a *actuators) Describe(ctx context.Context, req sdk.DescribeRequest) sdk.DescribeResponse {
	return a.sim.Describe(ctx, req)
}

// Configure is the sim actuator's.
func (a *actuators) Configure(ctx context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	return a.sim.Configure(ctx, req)
}

// Observe is the sim actuator's.
func (a *actuators) Observe(ctx context.Context, req sdk.ObserveRequest) sdk.ObserveResponse {
	return a.sim.Observe(ctx, req)
}

// Apply refuses what the modelled hardware refuses, then hands the step
// to the sim actuator.
func (a *actuators) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	if why := a.w.refuses(req.Step); why != "" {
		return sdk.ApplyResponse{Diagnostics: sdk.Errorf(nil, why)}
	}
	return a.sim.Apply(ctx, req, progress)
}

// refuses says why the hardware cannot carry out a step now, or "".
func (w *world) refuses(s pools.Step) string {
	switch s.Kind {
	case pools.StepPrefetch, pools.StepStart, pools.StepResidency, pools.StepDrain, pools.StepStop:
	default:
		return ""
	}
	ni, ok := w.nodeIdx[s.Node]
	if !ok {
		return fmt.Sprintf("node %s is not in the fleet", s.Node)
	}
	n := &w.nodes[ni]
	switch {
	case !n.reachable():
		return fmt.Sprintf("node %s does not answer", n.name)
	case s.Kind == pools.StepPrefetch && n.diskFull:
		return fmt.Sprintf("node %s has no room for %s: its disk is full", n.name, s.Prefetch.Model)
	case s.Kind == pools.StepStart:
		if i, ok := w.instIdx[instKey{s.Lane.Name, s.Node}]; ok && w.insts[i].latched {
			return fmt.Sprintf("lane %s on %s is latched by the memory guard; an operator must start it", s.Lane.Name, n.name)
		}
	}
	return ""
}

// nopRecorder keeps nothing: the model is the simulation's state.
type nopRecorder struct{}

// WriteState drops the state.
func (nopRecorder) WriteState(*pools.State, int) error { return nil }

// Journal drops the event.
func (nopRecorder) Journal(store.Record) error { return nil }
