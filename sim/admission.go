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
func (w *world) admit(i int32) {
	in := &w.insts[i]
	if in.loaded || in.loading || in.pending || in.latched || in.draining || in.stopping || !in.registered {
		return
	}
	n := &w.nodes[in.node]
	if !n.up {
		return
	}
	mem := in.spec.MemoryGB
	if n.budget-w.keepWarm(in.node, i) < mem-epsilon {
		w.guardAbort(i)
		return
	}
	if n.used+mem > n.budget+epsilon {
		victims := w.evictable(in.node, i)
		room := n.budget - n.used
		for _, v := range victims {
			room += w.insts[v].spec.MemoryGB
		}
		if room < mem-epsilon {
			in.pending = true
			n.pending = append(n.pending, i)
			w.yieldTo(in.node, i, mem-room)
			return
		}
		var reload []int32
		for _, v := range victims {
			if n.used+mem <= n.budget+epsilon {
				break
			}
			w.evict(v)
			if w.gw.waiting(v) > 0 {
				reload = append(reload, v)
			}
		}
		w.beginLoad(i)
		for _, v := range reload {
			w.admit(v) // its waiting requests want it back
		}
		w.restorePreferred(in.node) // the evictions may have left room
		return
	}
	w.beginLoad(i)
}

// yieldTo makes busy lanes of a node yield to lane except's load, in the
// order admission evicts, until they hold short GB; none does if all of
// them together would not.
func (w *world) yieldTo(ni, except int32, short float64) {
	var busy []int32
	held := 0.0
	for _, j := range w.nodes[ni].insts {
		o := &w.insts[j]
		if j != except && o.loaded && !o.stopping && o.spec.Residency != pools.KeepWarm && !w.swappable(j) {
			busy = append(busy, j)
			held += o.spec.MemoryGB
		}
	}
	if held < short-epsilon {
		return
	}
	w.sortForEviction(busy)
	for _, j := range busy {
		if short <= epsilon {
			break
		}
		o := &w.insts[j]
		if !o.yielding {
			o.yielding, o.yieldLeft = true, w.gw.waiting(j)
		}
		short -= o.spec.MemoryGB
	}
}

// endYields lets the lanes of a node that yielded serve again once no
// load waits there.
func (w *world) endYields(ni int32) {
	if len(w.nodes[ni].pending) > 0 {
		return
	}
	for _, j := range w.nodes[ni].insts {
		if o := &w.insts[j]; o.yielding {
			o.yielding = false
			w.gw.serve(j)
		}
	}
}

// keepWarm is the memory of the keep-warm lanes loaded or loading on a
// node, lane except: what no eviction can free.
func (w *world) keepWarm(ni, except int32) float64 {
	held := 0.0
	for _, j := range w.nodes[ni].insts {
		o := &w.insts[j]
		if j != except && o.spec.Residency == pools.KeepWarm && (o.loaded || o.loading) {
			held += o.spec.MemoryGB
		}
	}
	return held
}

// evictable lists the idle lanes of a node that admission may evict for
// lane except, in the order it evicts them.
func (w *world) evictable(ni, except int32) []int32 {
	var out []int32
	for _, j := range w.nodes[ni].insts {
		o := &w.insts[j]
		if j != except && o.loaded && !o.stopping && o.spec.Residency != pools.KeepWarm && w.swappable(j) {
			out = append(out, j)
		}
	}
	w.sortForEviction(out)
	return out
}

// sortForEviction orders lanes as admission evicts them.
func (w *world) sortForEviction(out []int32) {
	slices.SortFunc(out, func(a, b int32) int {
		x, y := &w.insts[a], &w.insts[b]
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
func (w *world) evict(i int32) {
	in := &w.insts[i]
	in.loaded, in.yielding = false, false
	w.nodes[in.node].used -= in.spec.MemoryGB
	w.stats.Evictions++
	w.gw.evicted(i)
}

// beginLoad starts loading a lane; its memory counts from now on.
func (w *world) beginLoad(i int32) {
	in := &w.insts[i]
	in.loading = true
	w.nodes[in.node].used += in.spec.MemoryGB
	if in.forPlan {
		w.stats.GBLoadedByPlans += in.sizeGB
		in.forPlan = false
	} else {
		w.stats.GBReloaded += in.sizeGB
	}
	w.at(w.now+loadTime(in.sizeGB), evLoadDone, i, in.loadEpoch)
}

// loadDone finishes a load: the lane serves its queue and the plan steps
// waiting for it go on.
func (w *world) loadDone(i int32, epoch uint32) {
	in := &w.insts[i]
	if in.loadEpoch != epoch || !in.loading {
		return
	}
	in.loading, in.loaded = false, true
	in.lastUsed = w.now
	w.finishLoadSteps(i, true, "")
	w.gw.serve(i)
	if w.swappable(i) || len(w.nodes[in.node].pending) > 0 {
		w.becameIdle(i)
	}
}

// unload drops a lane from memory at once, cancelling a load in progress
// and leaving the queue of loads.
func (w *world) unload(i int32) {
	in := &w.insts[i]
	n := &w.nodes[in.node]
	if in.loaded || in.loading {
		n.used -= in.spec.MemoryGB
	}
	if in.loading {
		in.loadEpoch++
		w.finishLoadSteps(i, false, "the lane's node went down while it loaded")
	}
	w.dropPending(i, "the lane stopped waiting for room to load")
	in.loaded, in.loading, in.yielding = false, false, false
}

// dropPending takes a lane's load off its node's list of loads waiting
// for room: the plan steps waiting for it fail (why), and the lanes that
// yielded to it serve again if no other load waits.
func (w *world) dropPending(i int32, why string) {
	in := &w.insts[i]
	if !in.pending {
		return
	}
	n := &w.nodes[in.node]
	n.pending = slices.DeleteFunc(n.pending, func(j int32) bool { return j == i })
	in.pending = false
	w.finishLoadSteps(i, false, why)
	w.endYields(in.node)
}

// retryPending tries again the loads waiting on a node for room, in the
// order they came.
func (w *world) retryPending(ni int32) {
	n := &w.nodes[ni]
	waiting := n.pending
	n.pending = nil
	for _, i := range waiting {
		w.insts[i].pending = false
		w.admit(i)
	}
	w.endYields(ni)
}

// guardAbort is the memory guard refusing a load: the lane latches, the
// plan steps waiting for it fail and its requests go on to their
// fallbacks.
func (w *world) guardAbort(i int32) {
	in := &w.insts[i]
	n := &w.nodes[in.node]
	w.stats.GuardAborts++
	in.latched = true
	w.version++
	w.stats.note(w.now, "guard-abort", fmt.Sprintf("lane %s on %s: loading %s would pass the guard (%s budget, %s held by keep-warm lanes); latched until started by hand",
		in.spec.Name, n.name, pools.GB(in.spec.MemoryGB), pools.GB(n.budget), pools.GB(w.keepWarm(in.node, i))))
	w.finishLoadSteps(i, false, "the memory guard aborted the load")
	w.gw.requeue(i, false)
}

// restore loads what a node keeps resident when it has the room: its
// keep-warm lanes (admission evicts for them) and then its preferred
// lanes that fit in the memory free now.
func (w *world) restore(ni int32) {
	for _, i := range w.nodes[ni].insts {
		if in := &w.insts[i]; in.spec.Residency == pools.KeepWarm && !in.stopping {
			w.admit(i)
		}
	}
	w.restorePreferred(ni)
}

// restorePreferred loads the preferred lanes of a node that fit in its
// idle room.
func (w *world) restorePreferred(ni int32) {
	n := &w.nodes[ni]
	for _, i := range n.insts {
		in := &w.insts[i]
		if in.spec.Residency != pools.Preferred || in.loaded || in.loading || in.pending || in.latched || in.stopping || !in.registered {
			continue
		}
		if n.up && n.used+in.spec.MemoryGB <= n.budget+epsilon {
			w.beginLoad(i)
		}
	}
}
