package host

import (
	"context"

	"poolc.dev/poolc/plugins/convert"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
)

// Steps is the set as the runner's actuators for a plan made against the
// fleet before: each step goes to the plugin serving its target, as the
// SDK's step (with its node's endpoint, its model's source and digest,
// a route's old and new endpoints), and what a plugin observed after the
// step comes back in poolc's terms.
func (s *Set) Steps(before *pools.Fleet) runner.Actuators {
	return steps{set: s, plan: convert.NewPlan(s.pool, before, s.left)}
}

type steps struct {
	set  *Set
	plan convert.Plan
}

// For returns the plugin serving the step's target: the pool's, or the
// one the state recorded for a target that left the pool.
func (st steps) For(s pools.Step) (runner.Actuator, string, bool) {
	name := st.set.pool.StepPlugin(s)
	if name == "" {
		name = pools.LeftPlugin(st.set.left, s)
	}
	p, ok := st.set.byName[name]
	if !ok {
		return nil, name, false
	}
	return stepActuator{p: p, plan: st.plan}, name, true
}

// stepActuator carries out steps through one plugin.
type stepActuator struct {
	p    *running
	plan convert.Plan
}

// Apply sends the step to the plugin, restarting its process first when
// it has died.
func (a stepActuator) Apply(ctx context.Context, s pools.Step, progress pools.ProgressFunc) runner.Response {
	r := a.p.redact
	resp := restartable{a.p}.Apply(ctx, sdk.ApplyRequest{Step: a.plan.Step(s)}, redactProgress(r, convert.Progress(progress)))
	out := runner.Response{Retryable: resp.Retryable, Diagnostics: convert.StepDiagnostics(redactResponse(r, resp.Diagnostics))}
	if resp.Observed != nil && a.p.info.Capabilities.ApplyObserves {
		f := convert.Fleet(*resp.Observed)
		out.Observed = &f
	}
	return out
}
