package sim

import (
	"fmt"
	"slices"
	"time"

	"poolc.dev/poolc/compiler/plan"
	"poolc.dev/poolc/pools"
)

// What a plan step does to the modelled hardware and how long it takes:
// a prefetch the weights' size over the node's link, a start the load of
// its weights (admission and the guard included), a drain until the lane
// is idle (at most plan.DrainSeconds). An attempt the hardware fails on
// the way (its node crashed, the guard aborted the load) ends failed; the
// runner's schedule (execute.go) decides what follows.

// actuator is what plan steps do to the modelled hardware: the fleet's
// lane processes and weights, the gateway's routes, as the nodes' health
// allows.
type actuator struct {
	*clock
	links   Links
	fleet   *fleet
	adm     *admission
	guard   *guard
	gw      *gateway
	routing *routing
	faults  *faults
}

// begin starts the work of an attempt of a step; the executor ends it
// when its time comes.
func (a *actuator) begin(x *execution, ref stepRef) {
	s := &x.steps[ref.step]
	st := x.plan.Steps[ref.step]
	after := func(d time.Duration) { a.atStep(a.now+d, evStepDone, ref) }
	failNow := func(why string, retryable bool) {
		s.fail, s.retryable = why, retryable
		after(0)
	}
	if ni, ok := a.fleet.nodeIdx[st.Node]; ok {
		s.epoch = a.faults.epoch(ni)
	}
	switch st.Kind {
	case pools.StepPrefetch, pools.StepStart, pools.StepResidency, pools.StepDrain, pools.StepStop:
		if why, retryable := a.refuses(st); why != "" {
			failNow(why, retryable)
			return
		}
	}
	if (st.Kind == pools.StepDrain || st.Kind == pools.StepStop) && a.superseded(st) {
		after(0)
		return
	}
	switch st.Kind {
	case pools.StepPrefetch:
		after(secs(st.Prefetch.SizeGB / a.link(st.Node)))
	case pools.StepStart:
		if i, ok := a.fleet.lookup(st.Lane.Name, st.Node); ok && st.From != "" {
			// Across on-demand the lane starts as it will be beside
			// itself as it was: the model's one instance takes the new
			// residency, and the drain and stop of the old are no-ops.
			if !a.fleet.changeResidency(i, *st.Lane, ref) {
				after(secs(st.Estimate.Seconds))
			}
			return
		}
		i := a.fleet.register(*st.Lane)
		if st.Lane.Residency == pools.OnDemand {
			// Its first load, when a request comes, is the plan's doing.
			a.adm.planLoad(i)
			after(secs(st.Estimate.Seconds))
			return
		}
		a.adm.waitForLoad(i, ref)
	case pools.StepResidency:
		i, ok := a.fleet.lookup(st.Lane.Name, st.Node)
		if !ok {
			failNow(fmt.Sprintf("lane %s is not running on %s", st.Lane.Name, st.Node), false)
			return
		}
		if !a.fleet.changeResidency(i, *st.Lane, ref) {
			after(secs(st.Estimate.Seconds))
		}
	case pools.StepRoute:
		after(secs(plan.RouteSeconds))
	case pools.StepDrain:
		i, ok := a.fleet.lookup(st.Lane.Name, st.Node)
		if !ok {
			failNow(fmt.Sprintf("lane %s is not running on %s", st.Lane.Name, st.Node), false)
			return
		}
		in := &a.fleet.insts[i]
		in.draining = true
		a.adm.dropPending(i, "the lane was drained while it waited for room to load")
		// Requests not yet served follow their alias's route; those in
		// service finish.
		a.gw.requeue(i, true)
		after(secs(plan.DrainSeconds))
		if a.fleet.idle(i) {
			after(0)
		} else {
			in.drainStep = &ref
		}
	case pools.StepStop:
		if i, ok := a.fleet.instIdx[instKey{st.Lane.Name, st.Node}]; ok {
			a.fleet.insts[i].stopping = true
			a.fleet.version++
		}
		after(secs(plan.StopSeconds))
	default:
		after(secs(st.Estimate.Seconds))
	}
}

// superseded reports whether a drain or stop is about a lane as it was
// before its residency crossed on-demand (its own process, or its node's
// router serving it) while the model's instance already runs it as it
// will be: the step then changes nothing modelled.
func (a *actuator) superseded(st pools.Step) bool {
	i, ok := a.fleet.lookup(st.Lane.Name, st.Node)
	if !ok {
		return false
	}
	return (a.fleet.insts[i].spec.Residency == pools.OnDemand) != (st.Lane.Residency == pools.OnDemand)
}

// refuses says why the hardware cannot carry out a step now, or "", and
// whether trying again may succeed: a node that does not answer may
// answer later, as an actuator's connection that times out is worth
// retrying.
func (a *actuator) refuses(s pools.Step) (why string, retryable bool) {
	switch s.Kind {
	case pools.StepPrefetch, pools.StepStart, pools.StepResidency, pools.StepDrain, pools.StepStop:
	default:
		return "", false
	}
	ni, ok := a.fleet.nodeIdx[s.Node]
	if !ok {
		return fmt.Sprintf("node %s is not in the fleet", s.Node), false
	}
	switch {
	case !a.faults.reachable(ni):
		return fmt.Sprintf("node %s does not answer", s.Node), true
	case s.Kind == pools.StepPrefetch && a.faults.full(ni):
		return fmt.Sprintf("node %s has no room for %s: its disk is full", s.Node, s.Prefetch.Model), false
	case s.Kind == pools.StepStart:
		if i, ok := a.fleet.instIdx[instKey{s.Lane.Name, s.Node}]; ok && a.guard.latched(i) {
			return fmt.Sprintf("lane %s on %s is latched by the memory guard; an operator must start it", s.Lane.Name, s.Node), false
		}
	}
	return "", false
}

// link is the prefetch bandwidth of a node, in GB/s.
func (a *actuator) link(node string) float64 {
	if gbps, ok := a.links.PerNode[node]; ok {
		return gbps
	}
	return a.links.DefaultGBps
}

// effect makes a step's change in the model when its attempt's time has
// come, or says why it cannot.
func (a *actuator) effect(st pools.Step, s *xstep) string {
	if ni, ok := a.fleet.nodeIdx[st.Node]; ok && st.Kind != pools.StepRoute {
		if a.faults.epoch(ni) != s.epoch || !a.faults.up(ni) {
			return fmt.Sprintf("node %s went down during the step", st.Node)
		}
	}
	if (st.Kind == pools.StepDrain || st.Kind == pools.StepStop) && a.superseded(st) {
		return ""
	}
	switch st.Kind {
	case pools.StepPrefetch:
		if a.faults.full(a.fleet.nodeIdx[st.Node]) {
			return fmt.Sprintf("node %s ran out of disk", st.Node)
		}
		i, found := slices.BinarySearchFunc(a.fleet.prefetched, *st.Prefetch, pools.ComparePrefetch)
		if !found {
			a.fleet.prefetched = slices.Insert(a.fleet.prefetched, i, *st.Prefetch)
			a.fleet.version++
		}
	case pools.StepRoute:
		if !a.routing.setRoute(*st.Route) {
			return fmt.Sprintf("lane %s is not running on %s", st.Route.Lane, st.Route.Node)
		}
	case pools.StepDrain:
		if i, ok := a.fleet.instIdx[instKey{st.Lane.Name, st.Node}]; ok && a.fleet.insts[i].drainStep != nil {
			a.fleet.insts[i].drainStep = nil
		}
	case pools.StepStop:
		if i, ok := a.fleet.instIdx[instKey{st.Lane.Name, st.Node}]; ok {
			a.fleet.stop(i)
		}
	case pools.StepMemberEnsure, pools.StepImageSync, pools.StepMemberRemove:
		f := pools.Fleet{Members: a.fleet.members}
		if err := f.Apply(st); err != nil {
			return err.Error()
		}
		a.fleet.members = f.Members
		a.fleet.version++
	}
	return ""
}
