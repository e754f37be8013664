package sim

import (
	"fmt"
	"time"

	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
	"poolc.dev/poolc/runner/schedule"
)

// Carrying out a plan in virtual time: the runner's own scheduling state
// machine (runner/schedule), under the runner's default policy, decides
// which steps start and when, which failed attempts are tried again after
// which backoff, which steps are skipped because a step they depend on did
// not succeed, and which are cancelled when a later plan preempts; the
// model (steps.go) says how long each attempt takes and how it ends. An
// attempt still running after the runner's step timeout ends timed out,
// while its work goes on in the model, as it would on hardware.

// policy is the runner's default policy: what `poolc apply` uses unless
// told otherwise. The step timeout is the scenario's.
var policy = runner.Options{}.Policy()

// executor carries out the controller's plans: the runner's schedule
// decides, the actuator makes each attempt's change in the model.
type executor struct {
	*clock
	stats   *stats
	act     *actuator
	timeout time.Duration // the scenario's StepTimeout
	execs   []*execution
	// finished hears that an execution has an outcome for every step.
	finished func(*execution)
}

// stepRef names an attempt of a step of an execution.
type stepRef struct {
	exec    int32
	step    uint32
	attempt uint32
}

// execution is one plan being carried out.
type execution struct {
	id        int32
	plan      *pools.Plan
	m         *schedule.Machine
	steps     []xstep
	failed    []string  // the IDs of the steps that failed
	done      bool      // every step has an outcome
	preempted bool      // a later plan took over
	wakeAt    time.Time // the last retry time a wake is scheduled for
}

// xstep is a step of an execution: the attempt in flight (0: none), the
// attempt that timed out while its work goes on (0: none), the node's
// epoch when it began and, when the hardware decided to fail it before its
// time comes, why and whether trying again may help.
type xstep struct {
	attempt   uint32
	timedOut  uint32
	epoch     uint32
	fail      string
	retryable bool
}

// execute starts carrying out a plan.
func (e *executor) execute(p *pools.Plan) (*execution, error) {
	steps := make([]schedule.Step, len(p.Steps))
	for i, s := range p.Steps {
		steps[i] = schedule.Step{ID: s.ID, DependsOn: s.DependsOn}
	}
	m, err := schedule.New(steps, policy)
	if err != nil {
		return nil, fmt.Errorf("carrying out the plan at %s: %w", e.now, err)
	}
	x := &execution{id: int32(len(e.execs)), plan: p, m: m, steps: make([]xstep, len(p.Steps))}
	e.execs = append(e.execs, x)
	e.decided(x, m.Tick(e.vtime()))
	return x, nil
}

// vtime is the time the schedule sees: the virtual clock.
func (e *executor) vtime() time.Time { return epoch.Add(e.now) }

// decided carries out what the schedule decided.
func (e *executor) decided(x *execution, d schedule.Decision) {
	for _, a := range d.Start {
		ref := stepRef{exec: x.id, step: uint32(a.Step), attempt: uint32(a.Attempt)}
		s := &x.steps[a.Step]
		s.attempt, s.timedOut, s.fail, s.retryable = ref.attempt, 0, "", false
		e.atStep(e.now+e.timeout, evStepTimeout, ref)
		e.act.begin(x, ref)
	}
	for _, r := range d.Retry {
		e.stats.note(e.now, "step-retry", fmt.Sprintf("%s: attempt %d failed; trying again at %s", x.plan.Steps[r.Step].ID, r.Attempt, r.At.Sub(epoch)))
	}
	if !d.Wake.IsZero() && !d.Wake.Equal(x.wakeAt) {
		x.wakeAt = d.Wake
		e.at(d.Wake.Sub(epoch), evStepWake, x.id, 0)
	}
	if d.Over && !x.done {
		x.done = true
		e.finished(x)
	}
}

var _ loads = (*executor)(nil)

// attempt returns the step whose attempt ref names while that attempt is
// in flight, or nil.
func (e *executor) attempt(ref stepRef) *xstep {
	s := &e.execs[ref.exec].steps[ref.step]
	if s.attempt != ref.attempt {
		return nil
	}
	return s
}

// attemptEnded ends an attempt whose time has come: it takes effect in
// the model unless the hardware failed it on the way. An attempt that
// timed out takes effect all the same, unheard.
func (e *executor) attemptEnded(ref stepRef) {
	x := e.execs[ref.exec]
	s := e.attempt(ref)
	if s == nil {
		if s := &x.steps[ref.step]; s.timedOut == ref.attempt && s.fail == "" {
			s.timedOut = 0
			e.act.effect(x.plan.Steps[ref.step], s)
		}
		return
	}
	why, retryable := s.fail, s.retryable
	if why == "" {
		why = e.act.effect(x.plan.Steps[ref.step], s)
	}
	end := schedule.Success
	if why != "" {
		end = schedule.Failure
	}
	e.report(x, ref, schedule.Report{Step: int(ref.step), End: end, Retryable: retryable}, why)
}

// attemptTimedOut ends an attempt still in flight after the step timeout;
// its work goes on in the model.
func (e *executor) attemptTimedOut(ref stepRef) {
	s := e.attempt(ref)
	if s == nil {
		return
	}
	s.timedOut = ref.attempt
	x := e.execs[ref.exec]
	e.report(x, ref, schedule.Report{Step: int(ref.step), End: schedule.Timeout}, fmt.Sprintf("timed out after %s", e.timeout))
}

// report tells the schedule how an attempt ended and records the step's
// outcome when it has one.
func (e *executor) report(x *execution, ref stepRef, r schedule.Report, why string) {
	x.steps[ref.step].attempt = 0
	d := x.m.Report(e.vtime(), r)
	st := x.plan.Steps[ref.step]
	switch x.m.Result(r.Step).Outcome {
	case schedule.Done:
		if st.ChangesResidency() {
			e.stats.residencyChanges++
		}
		e.stats.note(e.now, "step", st.ID)
	case schedule.Failed:
		x.failed = append(x.failed, st.ID)
		e.stats.note(e.now, "step-failed", fmt.Sprintf("%s: %s", st.ID, why))
	}
	e.decided(x, d)
}

// wake starts the retries whose time has come.
func (e *executor) wake(xi int32) {
	if x := e.execs[xi]; !x.done {
		e.decided(x, x.m.Tick(e.vtime()))
	}
}

// preempt cancels an execution a later plan takes over.
func (e *executor) preempt(x *execution) {
	x.preempted = true
	e.cancel(x)
}

// cancel keeps the steps not yet begun, and those waiting to be retried,
// from beginning; the attempts in flight finish.
func (e *executor) cancel(x *execution) {
	e.decided(x, x.m.Cancel(e.vtime()))
}

// loadEnded ends a step that waited for a load: failed (why) unless ok.
func (e *executor) loadEnded(ref stepRef, ok bool, why string) {
	if s := e.attempt(ref); !ok && s != nil {
		s.fail = why
	}
	e.atStep(e.now, evStepDone, ref)
}
