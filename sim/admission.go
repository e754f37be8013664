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

// admission is the memory of each node and the loads of the lane
// processes on it: it owns each node's budget, the memory of the lanes
// loaded or loading there and the loads waiting for room, and each lane
// process's load — in memory, loading, waiting for room, yielding. It
// reads which processes run where from the fleet, asks the gateway about
// their requests (queues), the faults whether their node runs
// (nodeHealth), the guard which processes it latched (guard.go), the lru
// when each last served (lru.go), and tells the plan steps waiting for a
// load how it ended (waits.go).
type admission struct {
	*clock
	stats  *stats
	fleet  *fleet
	gw     queues
	health nodeHealth
	guard  *guard
	lru    *lru
	waits  *waits

	rooms []room     // by node
	procs []residing // by lane process
}

// room is one node's memory as admission has it.
type room struct {
	budget float64 // what admission may place: pools.Node.Budget
	used   float64 // memory of the lanes loaded or loading
	// pending are lanes waiting for room to load, first come first served.
	pending []int32
}

// residing is one lane process's load (its latch is the guard's, its
// last use the lru's).
type residing struct {
	loaded, loading, pending bool
	// loadEpoch changes when its load is cancelled, so load completions
	// scheduled before do nothing. A load goes on while the node hangs or
	// is cut off: only a crash or a stop cancels it.
	loadEpoch uint32
	// yielding marks a busy lane a load on its node waits for: it serves
	// yieldLeft more requests (those waiting when the load asked for
	// room), then takes no more until it is evicted, or until no load
	// waits on its node any more.
	yielding  bool
	yieldLeft int
}

func newAdmission(clk *clock, st *stats, g *guard, recent *lru, w *waits) *admission {
	return &admission{clock: clk, stats: st, guard: g, lru: recent, waits: w}
}

// track makes the record of lane process i's load, when the fleet
// registers it: records are never made while admission holds another's.
func (a *admission) track(i int32) {
	for int(i) >= len(a.procs) {
		a.procs = append(a.procs, residing{})
	}
}

// proc is lane process i's load.
func (a *admission) proc(i int32) *residing { return &a.procs[i] }

// setBudget gives node ni the memory admission may place there, the
// node's first time included.
func (a *admission) setBudget(ni int32, gb float64) {
	for int(ni) >= len(a.rooms) {
		a.rooms = append(a.rooms, room{})
	}
	a.rooms[ni].budget = gb
}

// admit loads lane process i, now or when room frees, unless the guard
// aborts it.
func (a *admission) admit(i int32) {
	in, p := a.fleet.process(i), a.proc(i)
	if p.loaded || p.loading || p.pending || a.guard.latched(i) || in.draining || in.stopping || !in.registered {
		return
	}
	if !a.health.up(in.node) {
		return
	}
	n := &a.rooms[in.node]
	mem := in.spec.MemoryGB
	if n.budget-a.keepWarm(in.node, i) < mem-epsilon {
		a.guardAbort(i)
		return
	}
	if n.used+mem > n.budget+epsilon {
		victims := a.evictable(in.node, i, true)
		room := n.budget - n.used
		for _, v := range victims {
			room += a.fleet.spec(v).MemoryGB
		}
		if room < mem-epsilon {
			p.pending = true
			n.pending = append(n.pending, i)
			a.yieldTo(in.node, i, mem-room)
			return
		}
		var reload []int32
		for _, v := range victims {
			if n.used+mem <= n.budget+epsilon {
				break
			}
			a.evict(v)
			if a.gw.waiting(v) > 0 {
				reload = append(reload, v)
			}
		}
		a.beginLoad(i)
		for _, v := range reload {
			a.admit(v) // its waiting requests want it back
		}
		a.restorePreferred(in.node) // the evictions may have left room
		return
	}
	a.beginLoad(i)
}

// yieldTo makes busy lanes of a node yield to lane except's load, in the
// order admission evicts, until they hold short GB; none does if all of
// them together would not.
func (a *admission) yieldTo(ni, except int32, short float64) {
	busy := a.evictable(ni, except, false)
	held := 0.0
	for _, j := range busy {
		held += a.fleet.spec(j).MemoryGB
	}
	if held < short-epsilon {
		return
	}
	for _, j := range busy {
		if short <= epsilon {
			break
		}
		if p := a.proc(j); !p.yielding {
			p.yielding, p.yieldLeft = true, a.gw.waiting(j)
		}
		short -= a.fleet.spec(j).MemoryGB
	}
}

// endYields lets the lanes of a node that yielded serve again once no
// load waits there.
func (a *admission) endYields(ni int32) {
	if len(a.rooms[ni].pending) > 0 {
		return
	}
	for _, j := range a.fleet.onNode(ni) {
		if p := a.proc(j); p.yielding {
			p.yielding = false
			a.gw.serve(j)
		}
	}
}

// keepWarm is the memory of the keep-warm lanes loaded or loading on a
// node, lane except: what no eviction can free.
func (a *admission) keepWarm(ni, except int32) float64 {
	held := 0.0
	for _, j := range a.fleet.onNode(ni) {
		o, p := a.fleet.spec(j), a.proc(j)
		if j != except && o.Residency == pools.KeepWarm && (p.loaded || p.loading) {
			held += o.MemoryGB
		}
	}
	return held
}

// evictable lists the lanes of a node in memory, lane except, that
// admission may evict for a load — when idle is set those idle (or done
// yielding), else those busy, which may yield — in the order it evicts
// them: on-demand before preferred, least recently used first, then
// those fewer aliases route to, then the larger, then by name.
func (a *admission) evictable(ni, except int32, idle bool) []int32 {
	var out []int32
	for _, j := range a.fleet.onNode(ni) {
		o := a.fleet.process(j)
		if j != except && a.proc(j).loaded && !o.stopping && o.spec.Residency != pools.KeepWarm && a.swappable(j) == idle {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(i, j int32) int {
		x, y := a.fleet.process(i), a.fleet.process(j)
		return cmp.Or(
			cmp.Compare(evictRank(x.spec.Residency), evictRank(y.spec.Residency)),
			cmp.Compare(a.lru.lastUsed(i), a.lru.lastUsed(j)),
			cmp.Compare(x.routed, y.routed),
			cmp.Compare(y.spec.MemoryGB, x.spec.MemoryGB),
			cmp.Compare(x.spec.Name, y.spec.Name),
		)
	})
	return out
}

func evictRank(r pools.Residency) int {
	if r == pools.OnDemand {
		return 0
	}
	return 1
}

// evict unloads an idle lane, or one that yielded, to make room; the
// requests still waiting for it now wait for it to load again.
func (a *admission) evict(i int32) {
	p := a.proc(i)
	p.loaded, p.yielding = false, false
	a.rooms[a.fleet.nodeOf(i)].used -= a.fleet.spec(i).MemoryGB
	a.stats.Evictions++
	a.gw.evicted(i)
}

// resident records lane process i as in memory from the start.
func (a *admission) resident(i int32) {
	a.proc(i).loaded = true
	a.rooms[a.fleet.nodeOf(i)].used += a.fleet.spec(i).MemoryGB
}

// beginLoad starts loading a lane; its memory counts from now on.
func (a *admission) beginLoad(i int32) {
	in, p := a.fleet.process(i), a.proc(i)
	p.loading = true
	a.rooms[in.node].used += in.spec.MemoryGB
	if a.waits.planned(i) {
		a.stats.GBLoadedByPlans += in.sizeGB
	} else {
		a.stats.GBReloaded += in.sizeGB
	}
	a.at(a.now+loadTime(in.sizeGB), evLoadDone, i, p.loadEpoch)
}

// loadDone finishes a load: the lane serves its queue and the plan steps
// waiting for it go on.
func (a *admission) loadDone(i int32, epoch uint32) {
	p := a.proc(i)
	if p.loadEpoch != epoch || !p.loading {
		return
	}
	p.loading, p.loaded = false, true
	a.lru.used(i)
	a.waits.end(i, true, "")
	a.gw.serve(i)
	if a.swappable(i) || len(a.rooms[a.fleet.nodeOf(i)].pending) > 0 {
		a.fleet.becameIdle(i)
	}
}

// unload drops a lane from memory at once, cancelling a load in progress
// and leaving the queue of loads.
func (a *admission) unload(i int32) {
	p := a.proc(i)
	n := &a.rooms[a.fleet.nodeOf(i)]
	if p.loaded || p.loading {
		n.used -= a.fleet.spec(i).MemoryGB
	}
	if p.loading {
		p.loadEpoch++
		a.waits.end(i, false, "the lane's node went down while it loaded")
	}
	a.dropPending(i, "the lane stopped waiting for room to load")
	p.loaded, p.loading, p.yielding = false, false, false
}

// dropPending takes a lane's load off its node's list of loads waiting
// for room: the plan steps waiting for it fail (why), and the lanes that
// yielded to it serve again if no other load waits.
func (a *admission) dropPending(i int32, why string) {
	p := a.proc(i)
	if !p.pending {
		return
	}
	ni := a.fleet.nodeOf(i)
	n := &a.rooms[ni]
	n.pending = slices.DeleteFunc(n.pending, func(j int32) bool { return j == i })
	p.pending = false
	a.waits.end(i, false, why)
	a.endYields(ni)
}

// forgetWaiting forgets the loads waiting for room on node ni, emptied.
func (a *admission) forgetWaiting(ni int32) { a.rooms[ni].pending = nil }

// retryPending tries again the loads waiting on a node for room, in the
// order they came.
func (a *admission) retryPending(ni int32) {
	n := &a.rooms[ni]
	if len(n.pending) == 0 {
		return
	}
	waiting := n.pending
	n.pending = nil
	for _, i := range waiting {
		a.proc(i).pending = false
		a.admit(i)
	}
	a.endYields(ni)
}

// guardAbort is the memory guard refusing a load: the lane latches, the
// plan steps waiting for it fail and its requests go on to their
// fallbacks.
func (a *admission) guardAbort(i int32) {
	in := a.fleet.process(i)
	n := &a.rooms[in.node]
	a.stats.GuardAborts++
	a.guard.latch(i)
	a.fleet.changed()
	a.stats.note(a.now, "guard-abort", fmt.Sprintf("lane %s on %s: loading %s would pass the guard (%s budget, %s held by keep-warm lanes); latched until started by hand",
		in.spec.Name, a.fleet.name(in.node), pools.GB(in.spec.MemoryGB), pools.GB(n.budget), pools.GB(a.keepWarm(in.node, i))))
	a.waits.end(i, false, "the memory guard aborted the load")
	a.gw.requeue(i, false)
}

// The admission's answers to the gateway's questions (lanes).

func (a *admission) loaded(i int32) bool { return a.proc(i).loaded }

func (a *admission) ready(i int32) bool {
	p := a.proc(i)
	return p.loaded && a.health.reachable(a.fleet.nodeOf(i)) && !(p.yielding && p.yieldLeft == 0)
}

func (a *admission) take(i int32) float64 {
	p := a.proc(i)
	if p.yielding {
		p.yieldLeft--
	}
	a.lru.used(i)
	return a.fleet.process(i).serviceSeconds
}

func (a *admission) abandoned(i int32) {
	if a.gw.waiting(i) == 0 && a.waits.none(i) && a.fleet.spec(i).Residency == pools.OnDemand {
		a.dropPending(i, "") // nobody wants the load any more
	}
	a.fleet.freed(i)
}

// swappable reports whether admission may evict lane process i now: it
// is idle, or it yields and has served what it had to.
func (a *admission) swappable(i int32) bool {
	p := a.proc(i)
	return !a.gw.busy(i) && (a.gw.waiting(i) == 0 || p.yielding && p.yieldLeft == 0)
}

// restore loads what a node keeps resident when it has the room: its
// keep-warm lanes (admission evicts for them) and then its preferred
// lanes that fit in the memory free now.
func (a *admission) restore(ni int32) {
	for _, i := range a.fleet.onNode(ni) {
		if in := a.fleet.process(i); in.spec.Residency == pools.KeepWarm && !in.stopping {
			a.admit(i)
		}
	}
	a.restorePreferred(ni)
}

// restorePreferred loads the preferred lanes of a node that fit in its
// idle room.
func (a *admission) restorePreferred(ni int32) {
	n := &a.rooms[ni]
	for _, i := range a.fleet.onNode(ni) {
		in, p := a.fleet.process(i), a.proc(i)
		if in.spec.Residency != pools.Preferred || p.loaded || p.loading || p.pending || a.guard.latched(i) || in.stopping || !in.registered {
			continue
		}
		if a.health.up(ni) && n.used+in.spec.MemoryGB <= n.budget+epsilon {
			a.beginLoad(i)
		}
	}
}

// waitForLoad makes a step wait for a lane's load, asking for it.
func (a *admission) waitForLoad(i int32, ref stepRef) {
	p := a.proc(i)
	if p.loaded {
		a.atStep(a.now, evStepDone, ref)
		return
	}
	a.waits.add(i, ref)
	a.waits.plan(i, !p.loading)
	a.admit(i)
	if !p.loaded && !p.loading && !p.pending {
		// Admission turned it away: the node is down, or the lane is
		// latched, draining or stopping.
		a.waits.end(i, false, "the lane cannot load now")
	}
}

// planLoad marks lane process i's next load as a plan's doing unless it
// is in memory or loading already: a plan started it on demand.
func (a *admission) planLoad(i int32) {
	p := a.proc(i)
	a.waits.plan(i, !p.loaded && !p.loading)
}
