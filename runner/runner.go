// Package runner carries out a plan: it walks the step DAG with bounded
// parallelism, sends each step to the actuator that handles its kind,
// retries only what an actuator marks retryable, skips every dependent of
// a failed step while independent branches go on, and records the fleet
// after every step.
package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// Defaults for Options fields left zero.
const (
	DefaultParallelism = 10
	DefaultStepTimeout = 10 * time.Minute
	DefaultRetries     = 3
	DefaultBackoff     = time.Second
	// DefaultSnapshotInterval is the least time between two snapshots
	// of the state during a run.
	DefaultSnapshotInterval = time.Second
)

// Actuators finds the actuator for a step kind and names the plugin.
type Actuators interface {
	For(kind pools.StepKind) (sdk.Actuator, string, bool)
}

// Recorder keeps what the runner learns: a journal of step events, each
// finished step with its effect (the step as the state records it), and
// now and then a snapshot of the state. Journal must have written the
// record (to the OS, at least) when it returns, since a snapshot is taken
// only now and then and the journal holds what a kill would lose; an
// error from it stops the run. WriteState writes a snapshot holding the
// effects of the first finished records journaled; it may be slow, and
// runs beside the steps.
type Recorder interface {
	Journal(r store.Record) error
	WriteState(st *pools.State, finished int) error
}

// Options shape a run.
type Options struct {
	// Parallelism is the most steps in flight at once.
	Parallelism int
	// StepTimeout bounds each attempt of a step.
	StepTimeout time.Duration
	// Retries is how many times a retryable failure is tried again; 0
	// means DefaultRetries, a negative number none.
	Retries int
	// Backoff is the wait before the first retry; it doubles each time.
	Backoff time.Duration
	// Events receives progress, one event at a time.
	Events func(Event)
	// SnapshotInterval is the least time between two snapshots of the
	// state; the last one is written when the run ends.
	SnapshotInterval time.Duration
}

func (o *Options) defaults() {
	if o.Parallelism <= 0 {
		o.Parallelism = DefaultParallelism
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = DefaultStepTimeout
	}
	switch {
	case o.Retries == 0:
		o.Retries = DefaultRetries
	case o.Retries < 0:
		o.Retries = 0
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Events == nil {
		o.Events = func(Event) {}
	}
	if o.SnapshotInterval <= 0 {
		o.SnapshotInterval = DefaultSnapshotInterval
	}
}

// Outcome is what became of one step.
type Outcome string

// The outcomes of a step.
const (
	Done      Outcome = "done"
	Failed    Outcome = "failed"
	Skipped   Outcome = "skipped"
	Cancelled Outcome = "cancelled"
)

// StepResult is the outcome of a step with the findings that explain it.
type StepResult struct {
	ID          string
	Outcome     Outcome
	Plugin      string
	Attempts    int
	Elapsed     time.Duration
	Diagnostics sdk.Diagnostics
}

// Result is the outcome of a run: every step's result in plan order and
// the state after it.
type Result struct {
	Steps []StepResult
	State *pools.State
	// WriteErr is what failed to be recorded, if anything: the first
	// journal write that failed (which stops the run), or the last
	// snapshot of the state.
	WriteErr error
}

// Count returns how many steps had the outcome.
func (r Result) Count(o Outcome) int {
	n := 0
	for _, s := range r.Steps {
		if s.Outcome == o {
			n++
		}
	}
	return n
}

// OK reports whether every step was done.
func (r Result) OK() bool { return r.Count(Done) == len(r.Steps) && r.WriteErr == nil }

// Run carries out the plan from state st. Cancelling ctx stops new steps
// from starting and cancels the steps in flight; Run returns once they
// have returned. A journal write that fails stops the run as a cancel
// does.
func Run(ctx context.Context, plan *pools.Plan, st *pools.State, acts Actuators, rec Recorder, opt Options) Result {
	opt.defaults()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	r := &run{plan: plan, acts: acts, opt: opt,
		results: make(map[string]*StepResult, len(plan.Steps)), dependents: map[string][]string{}}
	for _, s := range plan.Steps {
		for _, d := range s.DependsOn {
			r.dependents[d] = append(r.dependents[d], s.ID)
		}
	}
	r.rec = newRecording(ctx, stop, rec, st, opt.SnapshotInterval)
	r.loop(ctx)
	res := Result{WriteErr: r.rec.close()}
	res.State, _ = r.rec.snapshot()
	for _, s := range plan.Steps {
		res.Steps = append(res.Steps, *r.results[s.ID])
	}
	return res
}

type run struct {
	plan       *pools.Plan
	acts       Actuators
	rec        *recording
	opt        Options
	dependents map[string][]string

	mu      sync.Mutex // guards results
	results map[string]*StepResult
	events  sync.Mutex // serializes Events
}

func (r *run) emit(e Event) {
	e.Time = time.Now()
	r.events.Lock()
	defer r.events.Unlock()
	r.opt.Events(e)
}

// loop starts each step whose dependencies are done, up to the
// parallelism, until every step has an outcome.
func (r *run) loop(ctx context.Context) {
	waiting := map[string]int{}
	var ready []pools.Step
	for _, s := range r.plan.Steps {
		waiting[s.ID] = len(s.DependsOn)
		if len(s.DependsOn) == 0 {
			ready = append(ready, s)
		}
	}
	finished := make(chan StepResult)
	running, decided := 0, 0
	byID := map[string]pools.Step{}
	for _, s := range r.plan.Steps {
		byID[s.ID] = s
	}
	for decided < len(r.plan.Steps) {
		for running < r.opt.Parallelism && len(ready) > 0 && ctx.Err() == nil {
			s := ready[0]
			ready = ready[1:]
			running++
			go func() { finished <- r.step(ctx, s) }()
		}
		if running == 0 {
			// Cancelled with nothing in flight: the rest never starts.
			for _, s := range r.plan.Steps {
				if r.results[s.ID] == nil {
					r.settle(StepResult{ID: s.ID, Outcome: Cancelled}, "cancelled before it started")
					decided++
				}
			}
			return
		}
		res := <-finished
		running--
		r.settle(res, "")
		decided++
		if res.Outcome != Done {
			decided += r.skipDependents(res.ID)
			continue
		}
		for _, next := range r.dependents[res.ID] {
			if waiting[next]--; waiting[next] == 0 && r.results[next] == nil {
				ready = append(ready, byID[next])
			}
		}
	}
}

func (r *run) settle(res StepResult, why string) {
	r.mu.Lock()
	r.results[res.ID] = &res
	r.mu.Unlock()
	if res.Outcome == Cancelled && why != "" {
		r.rec.Journal(store.StepCancelled, res.ID, why)
		r.emit(Event{Kind: EventCancelled, Step: res.ID, Message: why})
	}
}

// skipDependents marks every step that depends, directly or not, on a step
// that did not succeed, and returns how many it marked.
func (r *run) skipDependents(id string) int {
	n := 0
	queue := append([]string(nil), r.dependents[id]...)
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		if r.results[next] != nil {
			continue
		}
		why := fmt.Sprintf("skipped: it depends on %s, which did not succeed", id)
		r.settle(StepResult{ID: next, Outcome: Skipped}, "")
		r.rec.Journal(store.StepSkipped, next, why)
		r.emit(Event{Kind: EventSkipped, Step: next, Message: why})
		n++
		queue = append(queue, r.dependents[next]...)
	}
	return n
}

// step carries out one step, with retries, and records its effect.
func (r *run) step(ctx context.Context, s pools.Step) StepResult {
	res := StepResult{ID: s.ID}
	act, plugin, ok := r.acts.For(s.Kind)
	res.Plugin = plugin
	if !ok {
		res.Outcome = Failed
		res.Diagnostics = sdk.Errorf(nil, fmt.Sprintf("no plugin handles %s steps; declare one in the pool's plugin blocks", s.Kind))
		r.rec.Journal(store.StepFailed, s.ID, res.Diagnostics[0].Summary)
		r.emit(Event{Kind: EventFailed, Step: s.ID, Message: res.Diagnostics[0].Summary})
		return res
	}
	start := time.Now()
	r.rec.Journal(store.StepStarted, s.ID, plugin)
	r.emit(Event{Kind: EventStarted, Step: s.ID, Plugin: plugin, Estimate: s.Estimate.Seconds})
	backoff := r.opt.Backoff
	for {
		res.Attempts++
		resp := r.attempt(ctx, act, s)
		res.Diagnostics = resp.Diagnostics
		res.Elapsed = time.Since(start)
		switch {
		case !resp.Diagnostics.HasErrors():
			res.Outcome = Done
			r.apply(s)
			r.emit(Event{Kind: EventDone, Step: s.ID, Plugin: plugin, Elapsed: res.Elapsed})
			return res
		case ctx.Err() != nil:
			res.Outcome = Cancelled
			r.rec.Journal(store.StepCancelled, s.ID, summary(resp.Diagnostics))
			r.emit(Event{Kind: EventCancelled, Step: s.ID, Plugin: plugin, Message: summary(resp.Diagnostics)})
			return res
		case resp.Retryable && res.Attempts <= r.opt.Retries:
			r.emit(Event{Kind: EventRetry, Step: s.ID, Plugin: plugin, Attempt: res.Attempts, Message: summary(resp.Diagnostics)})
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff *= 2
			continue
		}
		res.Outcome = Failed
		r.rec.Journal(store.StepFailed, s.ID, summary(resp.Diagnostics))
		r.emit(Event{Kind: EventFailed, Step: s.ID, Plugin: plugin, Message: summary(resp.Diagnostics)})
		return res
	}
}

func (r *run) attempt(ctx context.Context, act sdk.Actuator, s pools.Step) sdk.ApplyResponse {
	sctx, cancel := context.WithTimeout(ctx, r.opt.StepTimeout)
	defer cancel()
	resp := act.Apply(sctx, sdk.ApplyRequest{Step: s}, func(p sdk.Progress) {
		r.emit(Event{Kind: EventProgress, Step: s.ID, Message: p.Message, Fraction: p.Fraction})
	})
	if resp.Diagnostics.HasErrors() && errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		resp.Diagnostics = append(sdk.Errorf(nil, fmt.Sprintf("timed out after %s", r.opt.StepTimeout)), resp.Diagnostics...)
		resp.Retryable = true
	}
	return resp
}

// apply records a finished step in the state and the journal.
func (r *run) apply(s pools.Step) {
	if err := r.rec.finished(s); err != nil {
		r.emit(Event{Kind: EventFailed, Step: s.ID, Message: "recording the step in the state: " + err.Error()})
	}
}

func summary(ds sdk.Diagnostics) string {
	for _, d := range ds {
		if d.Severity == sdk.Error {
			if d.Detail != "" {
				return d.Summary + ": " + d.Detail
			}
			return d.Summary
		}
	}
	return ""
}
