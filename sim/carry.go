package sim

import (
	"fmt"
	"slices"
	"time"

	"poolc.dev/poolc/compiler/plan"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
)

// Carrying out a plan in virtual time: after the runner has applied a
// plan against the sim actuator, the steps it did are carried into the
// model the way a runner takes them on hardware — each once the steps it
// depends on are done, up to runner.DefaultParallelism at once — and take
// the time the hardware takes: a prefetch the weights' size over the
// node's link, a start the load of its weights (admission and the guard
// included), a drain until the lane is idle (at most plan.DrainSeconds).
// A step the hardware fails on the way (its node crashed, the guard
// aborted the load) skips its dependents, so requests keep their routes.

// stepRef names a step of an execution.
type stepRef struct {
	exec int32
	step uint32
}

// execution is one plan being carried out.
type execution struct {
	id         int32
	plan       *pools.Plan
	steps      []xstep
	dependents [][]int
	ready      []int
	running    int
	open       int      // steps not yet done, failed or skipped
	failed     []string // the IDs of the steps that failed
	done       bool     // every step has an outcome
	preempted  bool     // a later plan took over
}

type xstate uint8

const (
	xWaiting xstate = iota
	xRunning
	xDone
	xFailed
	xSkipped
)

// xstep is a step of an execution: its state, how many of its
// dependencies are not done, the node's epoch when it began and, when it
// is decided to fail before its time comes, why.
type xstep struct {
	step    pools.Step
	state   xstate
	waiting int
	epoch   uint32
	fail    string
}

// carry starts carrying out the steps the runner did.
func (w *world) carry(p *pools.Plan, res runner.Result) *execution {
	x := &execution{id: int32(len(w.ctl.execs)), plan: p,
		steps: make([]xstep, len(p.Steps)), dependents: make([][]int, len(p.Steps))}
	w.ctl.execs = append(w.ctl.execs, x)
	index := map[string]int{}
	for k, s := range p.Steps {
		index[s.ID] = k
		x.steps[k] = xstep{step: s, state: xSkipped}
	}
	for k, r := range res.Steps {
		switch r.Outcome {
		case runner.Done:
			x.steps[k].state = xWaiting
			x.open++
		case runner.Failed:
			x.failed = append(x.failed, r.ID)
			w.note(w.now, "step-failed", fmt.Sprintf("%s: %s", r.ID, diagnostics(r)))
		}
	}
	for k, s := range p.Steps {
		if x.steps[k].state != xWaiting {
			continue
		}
		for _, d := range s.DependsOn {
			x.dependents[index[d]] = append(x.dependents[index[d]], k)
			x.steps[k].waiting++
		}
		if x.steps[k].waiting == 0 {
			x.ready = append(x.ready, k)
		}
	}
	w.launch(x)
	return x
}

func diagnostics(r runner.StepResult) string {
	for _, d := range r.Diagnostics {
		return d.Summary
	}
	return string(r.Outcome)
}

// launch begins the ready steps, as many as the parallelism allows.
func (w *world) launch(x *execution) {
	for x.running < runner.DefaultParallelism && len(x.ready) > 0 {
		k := x.ready[0]
		x.ready = x.ready[1:]
		x.running++
		x.steps[k].state = xRunning
		w.begin(x, k)
	}
	if x.open == 0 && !x.done {
		x.done = true
		w.ctl.finished(x)
	}
}

// cancel keeps the steps not yet begun from beginning; the steps in
// flight finish.
func (w *world) cancel(x *execution) {
	for k := range x.steps {
		if x.steps[k].state == xWaiting {
			x.steps[k].state = xSkipped
			x.open--
		}
	}
	x.ready = nil
	w.launch(x)
}

// begin starts the work of a step; stepDone ends it.
func (w *world) begin(x *execution, k int) {
	s := &x.steps[k]
	st := s.step
	ref := stepRef{x.id, uint32(k)}
	after := func(d time.Duration) { w.at(w.now+d, evStepDone, ref.exec, ref.step) }
	failNow := func(why string) {
		s.fail = why
		after(0)
	}
	if ni, ok := w.nodeIdx[st.Node]; ok {
		s.epoch = w.nodes[ni].epoch
	}
	switch st.Kind {
	case pools.StepPrefetch, pools.StepStart, pools.StepResidency, pools.StepDrain, pools.StepStop:
		if why := w.refuses(st); why != "" {
			failNow(why)
			return
		}
	}
	switch st.Kind {
	case pools.StepPrefetch:
		after(secs(st.Prefetch.SizeGB / w.link(st.Node)))
	case pools.StepStart:
		i := w.register(*st.Lane)
		if st.Lane.Residency == pools.OnDemand {
			// Its first load, when a request comes, is the plan's doing.
			in := &w.insts[i]
			in.forPlan = !in.loaded && !in.loading
			after(secs(st.Estimate.Seconds))
			return
		}
		w.waitForLoad(i, ref)
	case pools.StepResidency:
		i, ok := w.instIdx[instKey{st.Lane.Name, st.Node}]
		if !ok || !w.insts[i].registered {
			failNow(fmt.Sprintf("lane %s is not running on %s", st.Lane.Name, st.Node))
			return
		}
		in := &w.insts[i]
		in.spec.Residency = st.Lane.Residency
		w.version++
		if st.Lane.Residency != pools.OnDemand && !in.loaded {
			w.waitForLoad(i, ref)
			return
		}
		if len(w.nodes[in.node].pending) > 0 {
			w.retryPending(in.node) // a downgraded lane may make room
		}
		after(secs(st.Estimate.Seconds))
	case pools.StepRoute:
		after(secs(plan.RouteSeconds))
	case pools.StepDrain:
		i, ok := w.instIdx[instKey{st.Lane.Name, st.Node}]
		if !ok || !w.insts[i].registered {
			failNow(fmt.Sprintf("lane %s is not running on %s", st.Lane.Name, st.Node))
			return
		}
		in := &w.insts[i]
		in.draining = true
		w.dropPending(i, "the lane was drained while it waited for room to load")
		// Requests not yet served follow their alias's route; those in
		// service finish.
		w.requeue(i, true)
		after(secs(plan.DrainSeconds))
		if in.idle() {
			after(0)
		} else {
			in.drainStep = &ref
		}
	case pools.StepStop:
		if i, ok := w.instIdx[instKey{st.Lane.Name, st.Node}]; ok {
			w.insts[i].stopping = true
			w.version++
		}
		after(secs(plan.StopSeconds))
	default:
		after(secs(st.Estimate.Seconds))
	}
}

// waitForLoad makes a step wait for a lane's load, asking for it.
func (w *world) waitForLoad(i int32, ref stepRef) {
	in := &w.insts[i]
	if in.loaded {
		w.at(w.now, evStepDone, ref.exec, ref.step)
		return
	}
	in.onLoad = append(in.onLoad, ref)
	in.forPlan = !in.loading
	w.admit(i)
	if !in.loaded && !in.loading && !in.pending {
		// Admission turned it away: the node is down, or the lane is
		// latched, draining or stopping.
		w.finishLoadSteps(i, false, "the lane cannot load now")
	}
}

// finishLoadSteps ends the steps waiting for a lane's load.
func (w *world) finishLoadSteps(i int32, ok bool, why string) {
	in := &w.insts[i]
	refs := in.onLoad
	in.onLoad = nil
	in.forPlan = false
	for _, ref := range refs {
		if !ok {
			w.ctl.execs[ref.exec].steps[ref.step].fail = why
		}
		w.at(w.now, evStepDone, ref.exec, ref.step)
	}
}

// link is the prefetch bandwidth of a node, in GB/s.
func (w *world) link(node string) float64 {
	if gbps, ok := w.sc.Links.PerNode[node]; ok {
		return gbps
	}
	return w.sc.Links.DefaultGBps
}

// stepDone ends a step whose time has come: it takes effect in the model
// unless the hardware failed it on the way.
func (w *world) stepDone(xi int32, k uint32) {
	x := w.ctl.execs[xi]
	s := &x.steps[k]
	if s.state != xRunning {
		return
	}
	why := s.fail
	if why == "" {
		why = w.effect(s)
	}
	w.complete(x, int(k), why)
}

// effect makes a step's change in the model, or says why it cannot.
func (w *world) effect(s *xstep) string {
	st := s.step
	if ni, ok := w.nodeIdx[st.Node]; ok && st.Kind != pools.StepRoute {
		if n := &w.nodes[ni]; n.epoch != s.epoch || !n.up {
			return fmt.Sprintf("node %s went down during the step", n.name)
		}
	}
	switch st.Kind {
	case pools.StepPrefetch:
		if w.nodes[w.nodeIdx[st.Node]].diskFull {
			return fmt.Sprintf("node %s ran out of disk", st.Node)
		}
		i, found := slices.BinarySearchFunc(w.prefetched, *st.Prefetch, pools.ComparePrefetch)
		if !found {
			w.prefetched = slices.Insert(w.prefetched, i, *st.Prefetch)
			w.version++
		}
	case pools.StepRoute:
		if !w.setRoute(*st.Route) {
			return fmt.Sprintf("lane %s is not running on %s", st.Route.Lane, st.Route.Node)
		}
	case pools.StepDrain:
		if i, ok := w.instIdx[instKey{st.Lane.Name, st.Node}]; ok && w.insts[i].drainStep != nil {
			w.insts[i].drainStep = nil
		}
	case pools.StepStop:
		if i, ok := w.instIdx[instKey{st.Lane.Name, st.Node}]; ok {
			w.stop(i)
		}
	case pools.StepMemberEnsure, pools.StepImageSync, pools.StepMemberRemove:
		f := pools.Fleet{Members: w.members}
		if err := f.Apply(st); err != nil {
			return err.Error()
		}
		w.members = f.Members
		w.version++
	}
	return ""
}

// stop ends a lane process: what it still holds is cut off, its memory
// freed, and what waits for room on its node goes on.
func (w *world) stop(i int32) {
	in := &w.insts[i]
	w.cutOff(i, true)
	w.unload(i)
	// The process is gone, and with it the guard's latch.
	in.registered, in.stopping, in.draining, in.latched = false, false, false, false
	w.version++
	if len(w.nodes[in.node].pending) > 0 {
		w.retryPending(in.node)
	}
	w.restorePreferred(in.node)
}

// complete records a step's outcome and lets its dependents go on, or
// skips them when it failed.
func (w *world) complete(x *execution, k int, why string) {
	s := &x.steps[k]
	x.running--
	x.open--
	if why != "" {
		s.state = xFailed
		x.failed = append(x.failed, s.step.ID)
		w.note(w.now, "step-failed", fmt.Sprintf("%s: %s", s.step.ID, why))
		w.skip(x, k)
	} else {
		s.state = xDone
		if s.step.Kind == pools.StepResidency {
			w.stats.residencyChanges++
		}
		w.note(w.now, "step", s.step.ID)
		for _, d := range x.dependents[k] {
			if x.steps[d].waiting--; x.steps[d].waiting == 0 && x.steps[d].state == xWaiting {
				x.ready = append(x.ready, d)
			}
		}
	}
	w.launch(x)
}

// skip marks every step that depends on step k, directly or not.
func (w *world) skip(x *execution, k int) {
	for _, d := range x.dependents[k] {
		if x.steps[d].state == xWaiting {
			x.steps[d].state = xSkipped
			x.open--
			w.skip(x, d)
		}
	}
}
