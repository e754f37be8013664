package sim

import "poolc.dev/poolc/pools"

// The fleet's answers to the gateway's questions (lanes).

var _ lanes = (*fleet)(nil)

func (f *fleet) processes(lane string) []int32 { return f.byLane[lane] }

func (f *fleet) lookup(lane, node string) (int32, bool) {
	i, ok := f.instIdx[instKey{lane, node}]
	return i, ok && f.insts[i].registered
}

func (f *fleet) spec(i int32) *pools.LaneState { return &f.insts[i].spec }
func (f *fleet) nodeOf(i int32) int32          { return f.insts[i].node }
func (f *fleet) servable(i int32) bool         { return f.insts[i].servable() }
func (f *fleet) loaded(i int32) bool           { return f.insts[i].loaded }

func (f *fleet) ready(i int32) bool {
	in := &f.insts[i]
	return in.loaded && f.health.reachable(in.node) && !(in.yielding && in.yieldLeft == 0)
}

func (f *fleet) take(i int32) float64 {
	in := &f.insts[i]
	if in.yielding {
		in.yieldLeft--
	}
	in.lastUsed = f.now
	return in.serviceSeconds
}

func (f *fleet) used(i int32) { f.insts[i].lastUsed = f.now }

func (f *fleet) freed(i int32) {
	if f.swappable(i) {
		f.becameIdle(i)
	}
}

func (f *fleet) abandoned(i int32) {
	in := &f.insts[i]
	if f.gw.waiting(i) == 0 && len(in.onLoad) == 0 && in.spec.Residency == pools.OnDemand {
		f.dropPending(i, "") // nobody wants the load any more
	}
	f.freed(i)
}

func (f *fleet) routedTo(from, to int32) {
	if from >= 0 {
		f.insts[from].routed--
	}
	if to >= 0 {
		// An alias routed to a draining lane puts it back in service.
		f.insts[to].routed++
		f.insts[to].draining = false
	}
	f.version++
}

// idle reports whether lane process i serves and holds no request.
func (f *fleet) idle(i int32) bool { return !f.gw.busy(i) && f.gw.waiting(i) == 0 }

// swappable reports whether admission may evict lane process i now: it
// is idle, or it yields and has served what it had to.
func (f *fleet) swappable(i int32) bool {
	in := &f.insts[i]
	return !f.gw.busy(i) && (f.gw.waiting(i) == 0 || in.yielding && in.yieldLeft == 0)
}

// becameIdle lets what waits for a lane to go idle (or to have yielded)
// go on: its drain, and the loads waiting on its node for room.
func (f *fleet) becameIdle(i int32) {
	in := &f.insts[i]
	if in.drainStep != nil && f.idle(i) {
		ref := *in.drainStep
		in.drainStep = nil
		f.atStep(f.now, evStepDone, ref)
	}
	if len(f.nodes[in.node].pending) > 0 {
		f.retryPending(in.node)
	}
}
