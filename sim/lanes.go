package sim

import "poolc.dev/poolc/pools"

// The fleet's side of the gateway's questions (lanes), and what admission
// asks of the gateway's queues.

var _ lanes = (*world)(nil)

func (w *world) processes(lane string) []int32 { return w.byLane[lane] }

func (w *world) lookup(lane, node string) (int32, bool) {
	i, ok := w.instIdx[instKey{lane, node}]
	return i, ok && w.insts[i].registered
}

func (w *world) spec(i int32) *pools.LaneState { return &w.insts[i].spec }
func (w *world) nodeOf(i int32) int32          { return w.insts[i].node }
func (w *world) servable(i int32) bool         { return w.insts[i].servable() }
func (w *world) loaded(i int32) bool           { return w.insts[i].loaded }
func (w *world) reachable(ni int32) bool       { return w.nodes[ni].reachable() }

func (w *world) silent(ni int32) bool {
	n := &w.nodes[ni]
	return n.up && n.hung && !n.partitioned
}

func (w *world) probed(ni int32) bool {
	n := &w.nodes[ni]
	return n.reachable() && w.now >= w.nextBeat(n, n.reachableSince)
}

func (w *world) ready(i int32) bool {
	in := &w.insts[i]
	return in.loaded && w.nodes[in.node].reachable() && !(in.yielding && in.yieldLeft == 0)
}

func (w *world) take(i int32) float64 {
	in := &w.insts[i]
	if in.yielding {
		in.yieldLeft--
	}
	in.lastUsed = w.now
	return in.serviceSeconds
}

func (w *world) used(i int32) { w.insts[i].lastUsed = w.now }

func (w *world) freed(i int32) {
	if w.swappable(i) {
		w.becameIdle(i)
	}
}

func (w *world) abandoned(i int32) {
	in := &w.insts[i]
	if w.gw.waiting(i) == 0 && len(in.onLoad) == 0 && in.spec.Residency == pools.OnDemand {
		w.dropPending(i, "") // nobody wants the load any more
	}
	w.freed(i)
}

func (w *world) routedTo(from, to int32) {
	if from >= 0 {
		w.insts[from].routed--
	}
	if to >= 0 {
		// An alias routed to a draining lane puts it back in service.
		w.insts[to].routed++
		w.insts[to].draining = false
	}
	w.version++
}

// idle reports whether lane process i serves and holds no request.
func (w *world) idle(i int32) bool { return !w.gw.busy(i) && w.gw.waiting(i) == 0 }

// swappable reports whether admission may evict lane process i now: it
// is idle, or it yields and has served what it had to.
func (w *world) swappable(i int32) bool {
	in := &w.insts[i]
	return !w.gw.busy(i) && (w.gw.waiting(i) == 0 || in.yielding && in.yieldLeft == 0)
}

// becameIdle lets what waits for a lane to go idle (or to have yielded)
// go on: its drain, and the loads waiting on its node for room.
func (w *world) becameIdle(i int32) {
	in := &w.insts[i]
	if in.drainStep != nil && w.idle(i) {
		ref := *in.drainStep
		in.drainStep = nil
		w.atStep(w.now, evStepDone, ref)
	}
	if len(w.nodes[in.node].pending) > 0 {
		w.retryPending(in.node)
	}
}
