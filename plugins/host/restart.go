package host

import (
	"context"
	"fmt"

	"poolc.dev/poolc/plugins/sdk"
)

// restartable is the actuator Set.For hands out: it forwards each call to
// the plugin's process and, when that process has died (a crash during an
// earlier step), starts and configures a new one first. The step that was
// in flight when the process died has already failed; the steps after it
// go on.
type restartable struct{ p *running }

var _ sdk.Actuator = restartable{}

// current returns the actuator of a live process, restarting the plugin if
// its process has ended. A reattached plugin is never restarted.
func (p *running) current(ctx context.Context) (sdk.Actuator, sdk.Diagnostics) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || !p.client.Exited() {
		return p.act, nil
	}
	fresh, ds := start(ctx, p.pool, p.decl, p.opts, nil, p.out)
	if fresh == nil {
		msg := fmt.Sprintf("plugin %s died and could not be started again", p.info.Name)
		for _, d := range ds {
			msg += ": " + d.Message
		}
		return nil, sdk.Errorf(nil, msg)
	}
	p.client, p.cmd, p.act = fresh.client, fresh.cmd, fresh.act
	return p.act, nil
}

func (p *running) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil { // nil for a built-in inspected in process
		p.client.Kill()
	}
}

func (r restartable) Describe(ctx context.Context, req sdk.DescribeRequest) sdk.DescribeResponse {
	act, ds := r.p.current(ctx)
	if act == nil {
		return sdk.DescribeResponse{Diagnostics: ds}
	}
	return act.Describe(ctx, req)
}

func (r restartable) Configure(ctx context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	act, ds := r.p.current(ctx)
	if act == nil {
		return sdk.ConfigureResponse{Diagnostics: ds}
	}
	return act.Configure(ctx, req)
}

func (r restartable) Observe(ctx context.Context, req sdk.ObserveRequest) sdk.ObserveResponse {
	act, ds := r.p.current(ctx)
	if act == nil {
		return sdk.ObserveResponse{Diagnostics: ds}
	}
	return act.Observe(ctx, req)
}

func (r restartable) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	act, ds := r.p.current(ctx)
	if act == nil {
		return sdk.ApplyResponse{Diagnostics: ds}
	}
	return act.Apply(ctx, req, progress)
}
