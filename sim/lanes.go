package sim

import "poolc.dev/poolc/pools"

// The fleet's answers to the gateway's questions (lanes); the admission
// answers those about memory.

var _ lanes = fleetLanes{}

// fleetLanes is what the gateway asks about lane processes: the fleet for
// which run where, the admission for their loads, the lru for their use.
type fleetLanes struct {
	*fleet
	*admission
	*lru
}

func (f *fleet) processes(lane string) []int32 { return f.byLane[lane] }

func (f *fleet) lookup(lane, node string) (int32, bool) {
	i, ok := f.instIdx[instKey{lane, node}]
	return i, ok && f.insts[i].registered
}

func (f *fleet) spec(i int32) *pools.LaneState { return &f.insts[i].spec }
func (f *fleet) nodeOf(i int32) int32          { return f.insts[i].node }

// servable reports whether the gateway may send lane process i a request.
func (f *fleet) servable(i int32) bool {
	in := &f.insts[i]
	return in.registered && !f.guard.latched(i) && !in.draining && !in.stopping
}

func (f *fleet) freed(i int32) {
	if f.adm.swappable(i) {
		f.becameIdle(i)
	}
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

// becameIdle lets what waits for a lane to go idle (or to have yielded)
// go on: its drain, and the loads waiting on its node for room.
func (f *fleet) becameIdle(i int32) {
	in := &f.insts[i]
	if in.drainStep != nil && f.idle(i) {
		ref := *in.drainStep
		in.drainStep = nil
		f.atStep(f.now, evStepDone, ref)
	}
	f.adm.retryPending(in.node)
}
