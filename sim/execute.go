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
func (w *world) execute(p *pools.Plan) (*execution, error) {
	steps := make([]schedule.Step, len(p.Steps))
	for i, s := range p.Steps {
		steps[i] = schedule.Step{ID: s.ID, DependsOn: s.DependsOn}
	}
	m, err := schedule.New(steps, policy)
	if err != nil {
		return nil, fmt.Errorf("carrying out the plan at %s: %w", w.now, err)
	}
	x := &execution{id: int32(len(w.ctl.execs)), plan: p, m: m, steps: make([]xstep, len(p.Steps))}
	w.ctl.execs = append(w.ctl.execs, x)
	w.decided(x, m.Tick(w.vtime()))
	return x, nil
}

// vtime is the time the schedule sees: the virtual clock.
func (w *world) vtime() time.Time { return epoch.Add(w.now) }

// decided carries out what the schedule decided.
func (w *world) decided(x *execution, d schedule.Decision) {
	for _, a := range d.Start {
		ref := stepRef{exec: x.id, step: uint32(a.Step), attempt: uint32(a.Attempt)}
		s := &x.steps[a.Step]
		s.attempt, s.timedOut, s.fail, s.retryable = ref.attempt, 0, "", false
		w.atStep(w.now+w.sc.StepTimeout, evStepTimeout, ref)
		w.begin(x, ref)
	}
	for _, r := range d.Retry {
		w.stats.note(w.now, "step-retry", fmt.Sprintf("%s: attempt %d failed; trying again at %s", x.plan.Steps[r.Step].ID, r.Attempt, r.At.Sub(epoch)))
	}
	if !d.Wake.IsZero() && !d.Wake.Equal(x.wakeAt) {
		x.wakeAt = d.Wake
		w.at(d.Wake.Sub(epoch), evStepWake, x.id, 0)
	}
	if d.Over && !x.done {
		x.done = true
		w.ctl.finished(x)
	}
}

// attempt returns the step whose attempt ref names while that attempt is
// in flight, or nil.
func (l *loop) attempt(ref stepRef) *xstep {
	s := &l.execs[ref.exec].steps[ref.step]
	if s.attempt != ref.attempt {
		return nil
	}
	return s
}

// attemptEnded ends an attempt whose time has come: it takes effect in
// the model unless the hardware failed it on the way. An attempt that
// timed out takes effect all the same, unheard.
func (w *world) attemptEnded(ref stepRef) {
	x := w.ctl.execs[ref.exec]
	s := w.ctl.attempt(ref)
	if s == nil {
		if s := &x.steps[ref.step]; s.timedOut == ref.attempt && s.fail == "" {
			s.timedOut = 0
			w.effect(x.plan.Steps[ref.step], s)
		}
		return
	}
	why, retryable := s.fail, s.retryable
	if why == "" {
		why = w.effect(x.plan.Steps[ref.step], s)
	}
	end := schedule.Success
	if why != "" {
		end = schedule.Failure
	}
	w.report(x, ref, schedule.Report{Step: int(ref.step), End: end, Retryable: retryable}, why)
}

// attemptTimedOut ends an attempt still in flight after the step timeout;
// its work goes on in the model.
func (w *world) attemptTimedOut(ref stepRef) {
	s := w.ctl.attempt(ref)
	if s == nil {
		return
	}
	s.timedOut = ref.attempt
	x := w.ctl.execs[ref.exec]
	w.report(x, ref, schedule.Report{Step: int(ref.step), End: schedule.Timeout}, fmt.Sprintf("timed out after %s", w.sc.StepTimeout))
}

// report tells the schedule how an attempt ended and records the step's
// outcome when it has one.
func (w *world) report(x *execution, ref stepRef, r schedule.Report, why string) {
	x.steps[ref.step].attempt = 0
	d := x.m.Report(w.vtime(), r)
	st := x.plan.Steps[ref.step]
	switch x.m.Result(r.Step).Outcome {
	case schedule.Done:
		if st.ChangesResidency() {
			w.stats.residencyChanges++
		}
		w.stats.note(w.now, "step", st.ID)
	case schedule.Failed:
		x.failed = append(x.failed, st.ID)
		w.stats.note(w.now, "step-failed", fmt.Sprintf("%s: %s", st.ID, why))
	}
	w.decided(x, d)
}

// wake starts the retries whose time has come.
func (w *world) wake(xi int32) {
	if x := w.ctl.execs[xi]; !x.done {
		w.decided(x, x.m.Tick(w.vtime()))
	}
}

// cancel keeps the steps not yet begun, and those waiting to be retried,
// from beginning; the attempts in flight finish.
func (w *world) cancel(x *execution) {
	w.decided(x, x.m.Cancel(w.vtime()))
}
