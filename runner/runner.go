// Package runner carries out a plan: it walks the step DAG with bounded
// parallelism, sends each step to the actuator that handles its kind,
// retries only what an actuator marks retryable, skips every dependent of
// a failed step while independent branches go on, and records the fleet
// after every step.
package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/schedule"
)

// Defaults for Options fields left zero.
const (
	// DefaultParallelism is the most steps in flight at once when
	// Options.Parallelism is zero.
	DefaultParallelism = 10
	// DefaultStepTimeout bounds each attempt of a step (a duration) when
	// Options.StepTimeout is zero.
	DefaultStepTimeout = 10 * time.Minute
	// DefaultRetries is how many times a retryable failure is tried again
	// when Options.Retries is zero.
	DefaultRetries = 3
	// DefaultBackoff is the wait before the first retry (a duration,
	// doubled each time) when Options.Backoff is zero.
	DefaultBackoff = time.Second
	// DefaultSnapshotInterval is the least time between two snapshots
	// of the state during a run: the journal's.
	DefaultSnapshotInterval = journal.SnapshotInterval
)

// Actuators finds the actuator that carries out a step and names its
// plugin: the plugin serving the step's target (a node's runtime, the
// gateway, a pod pool's cluster or image sync).
type Actuators interface {
	For(s pools.Step) (Actuator, string, bool)
}

// Actuator carries out one step in poolc's terms; plugins/host adapts a
// plugin (which sees the SDK's types) to it. progress is nil when nothing
// watches the run (Options.Events is nil).
type Actuator interface {
	Apply(ctx context.Context, s pools.Step, progress pools.ProgressFunc) Response
}

// Response is how an attempt of a step ended: success when Diagnostics
// has no error. Retryable marks a failure worth trying again. Observed,
// when the plugin reports it, is the step's target as it is afterwards
// (the lane, or no lane after a stop; the route; the weights file; the
// member): the state records that instead of the step's planned effect,
// and a step whose observation contradicts it fails, naming both.
type Response struct {
	Retryable   bool
	Diagnostics pools.Diagnostics
	Observed    *pools.Fleet
}

// Recorder keeps what the runner learns: a journal of step events, each
// finished step with its effect (the step as the state records it), and
// now and then a snapshot of the state. Journal queues the record after
// those of earlier calls, and the wait it returns must return only once
// the record is written (to the OS, at least), since a snapshot is taken
// only now and then and the journal holds what a kill would lose; an
// error from the wait stops the run. The runner waits before it reports
// the event or lets the schedule go on, and queues finished records under
// the lock that applies their effects, so the journal has them in the
// state's order; records queued by parallel steps may share one write.
// WriteState writes a snapshot holding the effects of the first finished
// records journaled; it may be slow, and runs beside the steps.
type Recorder interface {
	Journal(r journal.Record) (wait func() error)
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
	// RetryTimeouts retries an attempt that timed out even when the
	// plugin did not mark its failure retryable. Off by default: a step
	// that timed out may still be running on its target.
	RetryTimeouts bool
	// Events receives progress, one event at a time. Without it, plugins
	// are asked for no progress reports.
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
	// Done is the outcome of a step that succeeded.
	Done Outcome = "done"
	// Failed is the outcome of a step whose last attempt failed.
	Failed Outcome = "failed"
	// Skipped is the outcome of a step not run because a step it depends
	// on did not succeed.
	Skipped Outcome = "skipped"
	// Cancelled is the outcome of a step cancelled before its next
	// attempt began.
	Cancelled Outcome = "cancelled"
)

// StepResult is the outcome of a step with the findings that explain it.
type StepResult struct {
	ID          string
	Outcome     Outcome
	Plugin      string
	Attempts    int
	Elapsed     time.Duration
	Diagnostics pools.Diagnostics
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

// Run carries out the plan from state st, which it leaves as it is: the
// state after the run is the Result's. Cancelling ctx stops new steps
// from starting and cancels the steps in flight; Run returns once they
// have returned. The order of steps, the retries and their backoff, the
// skips and the cancellation are decided by package schedule; Run carries
// out its decisions with a goroutine per attempt and the wall clock.
func Run(ctx context.Context, plan *pools.Plan, st *pools.State, acts Actuators, rec Recorder, opt Options) Result {
	watched := opt.Events != nil
	opt.defaults()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	r := &run{plan: plan, acts: acts, opt: opt, watched: watched,
		results: make([]StepResult, len(plan.Steps)), began: make([]time.Time, len(plan.Steps))}
	for i, s := range plan.Steps {
		r.results[i].ID = s.ID
	}
	r.rec = newRecording(ctx, stop, rec, st, opt.SnapshotInterval)
	r.loop(ctx)
	res := Result{Steps: r.results, WriteErr: r.rec.close()}
	res.State, _ = r.rec.snapshot()
	return res
}

// Policy is the scheduling policy the options stand for.
func (o Options) Policy() schedule.Policy {
	o.defaults()
	return schedule.Policy{Parallelism: o.Parallelism, Retries: o.Retries, Backoff: o.Backoff, RetryTimeouts: o.RetryTimeouts}
}

type run struct {
	plan *pools.Plan
	acts Actuators
	rec  *recording
	opt  Options
	// watched says Options.Events was given: only then are steps asked
	// for progress.
	watched bool

	events sync.Mutex // serializes Events

	// Only the loop's goroutine touches these.
	results []StepResult
	began   []time.Time // when each step's first attempt began
}

// ended is how an attempt ended, as its goroutine hands it back.
type ended struct {
	step   int
	end    schedule.End
	resp   Response
	plugin string
	at     time.Time
}

func (r *run) emit(e Event) {
	e.Time = time.Now()
	r.events.Lock()
	defer r.events.Unlock()
	r.opt.Events(e)
}

// loop feeds the schedule what happens (attempts ending, the time of a
// retry coming, ctx being cancelled) and carries out what it decides,
// until every step has an outcome.
func (r *run) loop(ctx context.Context) {
	steps := make([]schedule.Step, len(r.plan.Steps))
	for i, s := range r.plan.Steps {
		steps[i] = schedule.Step{ID: s.ID, DependsOn: s.DependsOn}
	}
	m, err := schedule.New(steps, r.opt.Policy())
	if err != nil {
		why := "the plan cannot be carried out: " + err.Error()
		for i := range r.results {
			r.results[i].Outcome, r.results[i].Diagnostics = Failed, pools.StepFailure(why)
			r.rec.Journal(journal.StepFailed, r.results[i].ID, why)
			r.emit(Event{Kind: EventFailed, Step: r.results[i].ID, Message: why})
		}
		return
	}
	finished := make(chan ended, r.opt.Parallelism)
	work := r.workers(ctx, finished)
	defer close(work)
	stop := ctx.Done()
	cancel := func() schedule.Decision {
		stop = nil
		return m.Cancel(time.Now())
	}
	var d schedule.Decision
	if ctx.Err() != nil {
		d = cancel()
	} else {
		d = m.Tick(time.Now())
	}
	for {
		r.carryOut(d, work)
		if d.Over {
			return
		}
		var wake <-chan time.Time
		if !d.Wake.IsZero() {
			wake = time.After(time.Until(d.Wake))
		}
		select {
		case e := <-finished:
			if stop != nil && ctx.Err() != nil {
				// Cancelled meanwhile: decide that first, so that
				// nothing more starts.
				r.carryOut(cancel(), work)
			}
			d = m.Report(e.at, r.ended(e))
			r.settled(m, e.step)
		case now := <-wake:
			d = m.Tick(now)
		case <-stop:
			d = cancel()
		}
	}
}

// workers starts the goroutines that carry out attempts, as many as the
// steps that may be in flight, and returns the channel that hands them
// attempts; closing it stops them. Reusing a few goroutines, rather than
// starting one per attempt, keeps the stacks a plugin call has grown.
// The schedule never has more attempts in flight than workers, so a send
// on the channel (buffered as deep) never blocks the loop.
func (r *run) workers(ctx context.Context, finished chan<- ended) chan<- schedule.Attempt {
	work := make(chan schedule.Attempt, r.opt.Parallelism)
	for range r.opt.Parallelism {
		go func() {
			for a := range work {
				finished <- r.attempt(ctx, a)
			}
		}()
	}
	return work
}

// carryOut starts the attempts a decision starts and records the
// outcomes it gives.
func (r *run) carryOut(d schedule.Decision, work chan<- schedule.Attempt) {
	for _, t := range d.Retry {
		res := &r.results[t.Step]
		r.emit(Event{Kind: EventRetry, Step: res.ID, Plugin: res.Plugin, Attempt: t.Attempt, Message: summary(res.Diagnostics)})
	}
	for _, k := range d.Skip {
		res := &r.results[k.Step]
		res.Outcome = Skipped
		why := fmt.Sprintf("skipped: it depends on %s, which did not succeed", r.plan.Steps[k.Cause].ID)
		r.rec.Journal(journal.StepSkipped, res.ID, why)
		r.emit(Event{Kind: EventSkipped, Step: res.ID, Message: why})
	}
	for _, i := range d.Cancelled {
		res := &r.results[i]
		res.Outcome = Cancelled
		why := "cancelled before it started"
		if res.Attempts > 0 {
			why = "cancelled while waiting to be retried: " + summary(res.Diagnostics)
		}
		r.rec.Journal(journal.StepCancelled, res.ID, why)
		r.emit(Event{Kind: EventCancelled, Step: res.ID, Plugin: res.Plugin, Message: why})
	}
	for _, a := range d.Start {
		r.results[a.Step].Attempts = a.Attempt
		if a.Attempt == 1 {
			r.began[a.Step] = time.Now()
		}
		work <- a
	}
}

// ended records what an attempt left in its step's result and says how
// it ended.
func (r *run) ended(e ended) schedule.Report {
	res := &r.results[e.step]
	res.Plugin, res.Diagnostics, res.Elapsed = e.plugin, e.resp.Diagnostics, e.at.Sub(r.began[e.step])
	return schedule.Report{Step: e.step, End: e.end, Retryable: e.resp.Retryable}
}

// settled records the outcome the schedule gave a step after its attempt
// ended (nothing when it waits for a retry).
func (r *run) settled(m *schedule.Machine, i int) {
	res := &r.results[i]
	switch m.Result(i).Outcome {
	case schedule.Done:
		res.Outcome = Done
	case schedule.Failed:
		res.Outcome = Failed
		r.rec.Journal(journal.StepFailed, res.ID, summary(res.Diagnostics))
		r.emit(Event{Kind: EventFailed, Step: res.ID, Plugin: res.Plugin, Message: summary(res.Diagnostics)})
	case schedule.Cancelled:
		res.Outcome = Cancelled
		r.rec.Journal(journal.StepCancelled, res.ID, summary(res.Diagnostics))
		r.emit(Event{Kind: EventCancelled, Step: res.ID, Plugin: res.Plugin, Message: summary(res.Diagnostics)})
	}
}

// actuator finds the actuator that carries out a step; it is the one
// place the runner chooses plugins.
func (r *run) actuator(s pools.Step) (Actuator, string, pools.Diagnostics) {
	act, plugin, ok := r.acts.For(s)
	if !ok {
		return nil, plugin, pools.StepFailure(fmt.Sprintf("no plugin serves the target of %s: its node or pod pool is no longer in the pool and the state has no record of the plugin that served it, or its plugin is not started", s.ID))
	}
	return act, plugin, nil
}

// attempt carries out one attempt of a step, on its own goroutine, and
// records its effect when it succeeds. An attempt that fails once its
// time limit has passed timed out, whatever the plugin's error says, so
// whether it is retried does not depend on which of the plugin and the
// deadline spoke first.
func (r *run) attempt(ctx context.Context, a schedule.Attempt) ended {
	s := r.plan.Steps[a.Step]
	e := ended{step: a.Step}
	act, plugin, diags := r.actuator(s)
	e.plugin = plugin
	if diags.HasErrors() {
		e.end, e.resp, e.at = schedule.Failure, Response{Diagnostics: diags}, time.Now()
		return e
	}
	if a.Attempt == 1 {
		r.rec.Journal(journal.StepStarted, s.ID, plugin)
		r.emit(Event{Kind: EventStarted, Step: s.ID, Plugin: plugin, Estimate: s.Estimate.Seconds})
	}
	sctx, cancel := context.WithTimeout(ctx, r.opt.StepTimeout)
	defer cancel()
	deadline, _ := sctx.Deadline()
	var progress pools.ProgressFunc
	if r.watched {
		progress = func(p pools.Progress) {
			r.emit(Event{Kind: EventProgress, Step: s.ID, Message: p.Message, Fraction: p.Fraction, BytesDone: p.BytesDone, BytesTotal: p.BytesTotal})
		}
	}
	e.resp = act.Apply(sctx, s, progress)
	e.at = time.Now()
	effect, contradiction := s, error(nil)
	if !e.resp.Diagnostics.HasErrors() && e.resp.Observed != nil {
		effect, contradiction = observedEffect(s, e.resp.Observed)
		if contradiction != nil {
			e.resp.Diagnostics = pools.StepFailure(fmt.Sprintf("plugin %s reports success, but %v", plugin, contradiction))
		}
	}
	switch {
	case !e.resp.Diagnostics.HasErrors():
		e.end = schedule.Success
		r.apply(effect)
		r.rec.Journal(journal.StepFinished, s.ID, "")
		r.emit(Event{Kind: EventDone, Step: s.ID, Plugin: plugin, Elapsed: e.at.Sub(r.began[a.Step])})
	case ctx.Err() != nil:
		e.end = schedule.Cancel
	case sctx.Err() != nil || !e.at.Before(deadline):
		e.end = schedule.Timeout
		e.resp.Diagnostics = append(pools.StepFailure(fmt.Sprintf("timed out after %s", r.opt.StepTimeout)), e.resp.Diagnostics...)
	default:
		e.end = schedule.Failure
	}
	return e
}

// apply records a finished step in the state and the journal.
func (r *run) apply(s pools.Step) {
	if err := r.rec.finished(s); err != nil {
		r.emit(Event{Kind: EventFailed, Step: s.ID, Message: "recording the step in the state: " + err.Error()})
	}
}

func summary(ds pools.Diagnostics) string {
	for _, d := range ds {
		if d.Severity == pools.Error {
			return d.Message
		}
	}
	return ""
}
