package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"poolc.dev/poolc/compiler/plan"
	"poolc.dev/poolc/pools"
)

// Admission: a lane loads only if its node keeps the guard's memory free,
// that is if the memory of the lanes loaded or loading plus its own stays
// within the node's budget. When it does not, idle lanes are evicted —
// on-demand before preferred, least recently used first, then those fewer
// aliases route to, then the larger, then by name; keep-warm lanes and
// lanes serving a request are never evicted. When evicting every idle
// lane would not make room the load waits, and busy lanes that would make
// room yield to it, as a swapping gateway does: each serves the requests
// that were waiting for it, takes no new ones and is then evicted; the
// requests that came meanwhile wait for it to load again. When even the
// keep-warm lanes leave no room, the memory guard aborts the load and
// latches the lane until an operator starts it.

// epsilon absorbs float rounding in GB sums.
const epsilon = 1e-9

// loadTime is how long loading weights of size GB takes: reading them at
// the planner's load rate, plus the process's start.
func loadTime(sizeGB float64) time.Duration {
	return secs(sizeGB/plan.LoadGBps + plan.StartSeconds)
}

// admit loads lane process i, now or when room frees, unless the guard
// aborts it.
func (f *fleet) admit(i int32) {
	in := &f.insts[i]
	if in.loaded || in.loading || in.pending || in.latched || in.draining || in.stopping || !in.registered {
		return
	}
	if !f.health.up(in.node) {
		return
	}
	n := &f.nodes[in.node]
	mem := in.spec.MemoryGB
	if n.budget-f.keepWarm(in.node, i) < mem-epsilon {
		f.guardAbort(i)
		return
	}
	if n.used+mem > n.budget+epsilon {
		victims := f.evictable(in.node, i)
		room := n.budget - n.used
		for _, v := range victims {
			room += f.insts[v].spec.MemoryGB
		}
		if room < mem-epsilon {
			in.pending = true
			n.pending = append(n.pending, i)
			f.yieldTo(in.node, i, mem-room)
			return
		}
		var reload []int32
		for _, v := range victims {
			if n.used+mem <= n.budget+epsilon {
				break
			}
			f.evict(v)
			if f.gw.waiting(v) > 0 {
				reload = append(reload, v)
			}
		}
		f.beginLoad(i)
		for _, v := range reload {
			f.admit(v) // its waiting requests want it back
		}
		f.restorePreferred(in.node) // the evictions may have left room
		return
	}
	f.beginLoad(i)
}

// yieldTo makes busy lanes of a node yield to lane except's load, in the
// order admission evicts, until they hold short GB; none does if all of
// them together would not.
func (f *fleet) yieldTo(ni, except int32, short float64) {
	var busy []int32
	held := 0.0
	for _, j := range f.nodes[ni].insts {
		o := &f.insts[j]
		if j != except && o.loaded && !o.stopping && o.spec.Residency != pools.KeepWarm && !f.swappable(j) {
			busy = append(busy, j)
			held += o.spec.MemoryGB
		}
	}
	if held < short-epsilon {
		return
	}
	f.sortForEviction(busy)
	for _, j := range busy {
		if short <= epsilon {
			break
		}
		o := &f.insts[j]
		if !o.yielding {
			o.yielding, o.yieldLeft = true, f.gw.waiting(j)
		}
		short -= o.spec.MemoryGB
	}
}

// endYields lets the lanes of a node that yielded serve again once no
// load waits there.
func (f *fleet) endYields(ni int32) {
	if len(f.nodes[ni].pending) > 0 {
		return
	}
	for _, j := range f.nodes[ni].insts {
		if o := &f.insts[j]; o.yielding {
			o.yielding = false
			f.gw.serve(j)
		}
	}
}

// keepWarm is the memory of the keep-warm lanes loaded or loading on a
// node, lane except: what no eviction can free.
func (f *fleet) keepWarm(ni, except int32) float64 {
	held := 0.0
	for _, j := range f.nodes[ni].insts {
		o := &f.insts[j]
		if j != except && o.spec.Residency == pools.KeepWarm && (o.loaded || o.loading) {
			held += o.spec.MemoryGB
		}
	}
	return held
}

// evictable lists the idle lanes of a node that admission may evict for
// lane except, in the order it evicts them.
func (f *fleet) evictable(ni, except int32) []int32 {
	var out []int32
	for _, j := range f.nodes[ni].insts {
		o := &f.insts[j]
		if j != except && o.loaded && !o.stopping && o.spec.Residency != pools.KeepWarm && f.swappable(j) {
			out = append(out, j)
		}
	}
	f.sortForEviction(out)
	return out
}

// sortForEviction orders lanes as admission evicts them.
func (f *fleet) sortForEviction(out []int32) {
	slices.SortFunc(out, func(a, b int32) int {
		x, y := &f.insts[a], &f.insts[b]
		return cmp.Or(
			cmp.Compare(evictRank(x.spec.Residency), evictRank(y.spec.Residency)),
			cmp.Compare(x.lastUsed, y.lastUsed),
			cmp.Compare(x.routed, y.routed),
			cmp.Compare(y.spec.MemoryGB, x.spec.MemoryGB),
			cmp.Compare(x.spec.Name, y.spec.Name),
		)
	})
}

func evictRank(r pools.Residency) int {
	if r == pools.OnDemand {
		return 0
	}
	return 1
}

// evict unloads an idle lane, or one that yielded, to make room; the
// requests still waiting for it now wait for it to load again.
func (f *fleet) evict(i int32) {
	in := &f.insts[i]
	in.loaded, in.yielding = false, false
	f.nodes[in.node].used -= in.spec.MemoryGB
	f.stats.Evictions++
	f.gw.evicted(i)
}

// beginLoad starts loading a lane; its memory counts from now on.
func (f *fleet) beginLoad(i int32) {
	in := &f.insts[i]
	in.loading = true
	f.nodes[in.node].used += in.spec.MemoryGB
	if in.forPlan {
		f.stats.GBLoadedByPlans += in.sizeGB
		in.forPlan = false
	} else {
		f.stats.GBReloaded += in.sizeGB
	}
	f.at(f.now+loadTime(in.sizeGB), evLoadDone, i, in.loadEpoch)
}

// loadDone finishes a load: the lane serves its queue and the plan steps
// waiting for it go on.
func (f *fleet) loadDone(i int32, epoch uint32) {
	in := &f.insts[i]
	if in.loadEpoch != epoch || !in.loading {
		return
	}
	in.loading, in.loaded = false, true
	in.lastUsed = f.now
	f.finishLoadSteps(i, true, "")
	f.gw.serve(i)
	if f.swappable(i) || len(f.nodes[in.node].pending) > 0 {
		f.becameIdle(i)
	}
}

// unload drops a lane from memory at once, cancelling a load in progress
// and leaving the queue of loads.
func (f *fleet) unload(i int32) {
	in := &f.insts[i]
	n := &f.nodes[in.node]
	if in.loaded || in.loading {
		n.used -= in.spec.MemoryGB
	}
	if in.loading {
		in.loadEpoch++
		f.finishLoadSteps(i, false, "the lane's node went down while it loaded")
	}
	f.dropPending(i, "the lane stopped waiting for room to load")
	in.loaded, in.loading, in.yielding = false, false, false
}

// dropPending takes a lane's load off its node's list of loads waiting
// for room: the plan steps waiting for it fail (why), and the lanes that
// yielded to it serve again if no other load waits.
func (f *fleet) dropPending(i int32, why string) {
	in := &f.insts[i]
	if !in.pending {
		return
	}
	n := &f.nodes[in.node]
	n.pending = slices.DeleteFunc(n.pending, func(j int32) bool { return j == i })
	in.pending = false
	f.finishLoadSteps(i, false, why)
	f.endYields(in.node)
}

// retryPending tries again the loads waiting on a node for room, in the
// order they came.
func (f *fleet) retryPending(ni int32) {
	n := &f.nodes[ni]
	waiting := n.pending
	n.pending = nil
	for _, i := range waiting {
		f.insts[i].pending = false
		f.admit(i)
	}
	f.endYields(ni)
}

// guardAbort is the memory guard refusing a load: the lane latches, the
// plan steps waiting for it fail and its requests go on to their
// fallbacks.
func (f *fleet) guardAbort(i int32) {
	in := &f.insts[i]
	n := &f.nodes[in.node]
	f.stats.GuardAborts++
	in.latched = true
	f.version++
	f.stats.note(f.now, "guard-abort", fmt.Sprintf("lane %s on %s: loading %s would pass the guard (%s budget, %s held by keep-warm lanes); latched until started by hand",
		in.spec.Name, n.name, pools.GB(in.spec.MemoryGB), pools.GB(n.budget), pools.GB(f.keepWarm(in.node, i))))
	f.finishLoadSteps(i, false, "the memory guard aborted the load")
	f.gw.requeue(i, false)
}

// restore loads what a node keeps resident when it has the room: its
// keep-warm lanes (admission evicts for them) and then its preferred
// lanes that fit in the memory free now.
func (f *fleet) restore(ni int32) {
	for _, i := range f.nodes[ni].insts {
		if in := &f.insts[i]; in.spec.Residency == pools.KeepWarm && !in.stopping {
			f.admit(i)
		}
	}
	f.restorePreferred(ni)
}

// restorePreferred loads the preferred lanes of a node that fit in its
// idle room.
func (f *fleet) restorePreferred(ni int32) {
	n := &f.nodes[ni]
	for _, i := range n.insts {
		in := &f.insts[i]
		if in.spec.Residency != pools.Preferred || in.loaded || in.loading || in.pending || in.latched || in.stopping || !in.registered {
			continue
		}
		if f.health.up(ni) && n.used+in.spec.MemoryGB <= n.budget+epsilon {
			f.beginLoad(i)
		}
	}
}

// changeResidency gives instance i lane l's residency and reports
// whether the step waits for its load (the lane now stays loaded); the
// caller ends the step otherwise.
func (f *fleet) changeResidency(i int32, l pools.LaneState, ref stepRef) bool {
	in := &f.insts[i]
	in.spec.Residency = l.Residency
	f.version++
	if l.Residency != pools.OnDemand && !in.loaded {
		f.waitForLoad(i, ref)
		return true
	}
	if len(f.nodes[in.node].pending) > 0 {
		f.retryPending(in.node) // a downgraded lane may make room
	}
	return false
}

// waitForLoad makes a step wait for a lane's load, asking for it.
func (f *fleet) waitForLoad(i int32, ref stepRef) {
	in := &f.insts[i]
	if in.loaded {
		f.atStep(f.now, evStepDone, ref)
		return
	}
	in.onLoad = append(in.onLoad, ref)
	in.forPlan = !in.loading
	f.admit(i)
	if !in.loaded && !in.loading && !in.pending {
		// Admission turned it away: the node is down, or the lane is
		// latched, draining or stopping.
		f.finishLoadSteps(i, false, "the lane cannot load now")
	}
}

// finishLoadSteps ends the steps waiting for a lane's load.
func (f *fleet) finishLoadSteps(i int32, ok bool, why string) {
	in := &f.insts[i]
	refs := in.onLoad
	in.onLoad = nil
	in.forPlan = false
	for _, ref := range refs {
		f.steps.loadEnded(ref, ok, why)
	}
}
