package sim

import (
	"time"

	"poolc.dev/poolc/pools"
)

// The gateway, modelled on llama-swap: each alias routes to one lane
// process; a lane serves one request at a time from a queue; a lane that
// is not loaded loads first (admission.go) while its requests wait, and
// a request that waited WaitLimitSeconds for a load goes to the alias's
// cloud fallback when it has one. When a request's lane cannot serve (it
// is stopping, latched, or on a node the gateway knows does not answer)
// the gateway tries the alias's fallbacks in order. A request sent to a
// node that does not answer fails after connectTimeout (crashed or cut
// off) or WaitLimitSeconds (hung); the gateway then marks the node bad
// and tries the next fallback, and a health probe, one per heartbeat
// interval, clears the mark once the node answers again.

// connectTimeout is how long the gateway waits to connect to a lane.
const connectTimeout = 3 * time.Second

// request is one request, from arrival to its end. Slots are reused; gen
// tells the events of one use from those of the next.
type request struct {
	src   int32
	alias int32
	inst  int32 // the lane process it waits at or is served by
	pos   int16 // 0: the alias's route; k: its k-th fallback
	state reqState
	cold  bool // it waits at a lane that is loading
	// coldWait is how long it waited for loads so far, until recorded.
	coldWait time.Duration
	gen      uint32
	arrival  time.Duration
	queued   time.Duration // when it joined its lane's queue
	// work is the request's service time as a multiple of the mean;
	// service is its service time, set when it is served: work times the
	// mean of the model serving it, or of its alias's demand.
	work    float64
	service time.Duration
}

type reqState uint8

const (
	reqFree reqState = iota
	reqArriving
	reqConnecting
	reqQueued
	reqServing
)

// newRequest makes a request of source src arriving at at, with work
// times its mean service time to be served.
func (w *world) newRequest(src int32, at time.Duration, work float64) int32 {
	var r int32
	if n := len(w.free); n > 0 {
		r, w.free = w.free[n-1], w.free[:n-1]
	} else {
		r = int32(len(w.reqs))
		w.reqs = append(w.reqs, request{})
	}
	q := &w.reqs[r]
	q.src, q.alias, q.inst, q.pos, q.state, q.cold = src, w.sources[src].alias, -1, 0, reqArriving, false
	q.coldWait = 0
	q.arrival, q.work = at, work
	return r
}

func (w *world) release(r int32) {
	q := &w.reqs[r]
	w.recordColdWait(q)
	q.state = reqFree
	q.gen++
	w.free = append(w.free, r)
}

// arrive handles a request's arrival and schedules its source's next one.
func (w *world) arrive(r int32) {
	w.stats.Requests++
	if w.ctl != nil {
		w.ctl.demand.add(w.reqs[r].alias, w.now)
	}
	w.nextArrival(w.reqs[r].src, w.now)
	w.dispatch(r)
}

// dispatch sends a request to the first target from its position on that
// can take it.
func (w *world) dispatch(r int32) {
	q := &w.reqs[r]
	a := &w.aliases[q.alias]
	for ; ; q.pos++ {
		target := noRoute
		switch {
		case q.pos == 0:
			target = a.route
		case int(q.pos) > len(a.fallbacks):
			w.fail(r)
			return
		case a.fallbacks[q.pos-1] == pools.Cloud:
			target = toCloud
		default:
			target = w.laneTarget(a.fallbacks[q.pos-1])
		}
		if target == toCloud {
			w.toCloud(r)
			return
		}
		if target < 0 || !w.insts[target].servable() {
			continue
		}
		n := &w.nodes[w.insts[target].node]
		if w.isBad(n) {
			continue
		}
		if !n.reachable() {
			timeout := connectTimeout
			if n.up && n.hung && !n.partitioned {
				timeout = w.waitLimit
			}
			q.state, q.inst = reqConnecting, target
			q.pos++
			w.at(w.now+timeout, evConnectFailed, r, q.gen)
			return
		}
		w.enqueue(target, r)
		return
	}
}

// laneTarget picks the process of a fallback lane to send a request to:
// one that can serve on a node the gateway trusts, a loaded one first.
func (w *world) laneTarget(lane string) int32 {
	best := noRoute
	for _, i := range w.byLane[lane] {
		in := &w.insts[i]
		if !in.servable() || w.isBad(&w.nodes[in.node]) {
			continue
		}
		if in.loaded {
			return i
		}
		if best == noRoute {
			best = i
		}
	}
	return best
}

// isBad reports whether the gateway avoids the node; a probe after the
// node answers again clears the mark.
func (w *world) isBad(n *node) bool {
	if n.gwBad && n.reachable() && w.now >= w.lease.next(n, n.reachableSince) {
		n.gwBad = false
	}
	return n.gwBad
}

// connectFailed handles a request whose node did not answer.
func (w *world) connectFailed(r int32, gen uint32) {
	q := &w.reqs[r]
	if q.gen != gen || q.state != reqConnecting {
		return
	}
	w.nodes[w.insts[q.inst].node].gwBad = true
	w.dispatch(r)
}

// enqueue puts a request in a lane's queue, loading the lane if needed.
func (w *world) enqueue(i, r int32) {
	q := &w.reqs[r]
	in := &w.insts[i]
	q.state, q.inst, q.queued = reqQueued, i, w.now
	in.queue = append(in.queue, queued{r, q.gen})
	in.waiting++
	if in.loaded {
		w.serve(i)
		return
	}
	q.cold = true
	if w.aliases[q.alias].hasCloud {
		w.at(w.now+w.waitLimit, evColdTimeout, r, q.gen)
	}
	w.admit(i)
}

// serve starts the next request of an idle, loaded lane.
func (w *world) serve(i int32) {
	in := &w.insts[i]
	if in.serving >= 0 || !in.loaded || !w.nodes[in.node].reachable() {
		return
	}
	if in.yielding && in.yieldLeft == 0 {
		return // it waits to be evicted
	}
	for in.head < len(in.queue) {
		e := in.queue[in.head]
		in.head++
		q := &w.reqs[e.req]
		if q.gen != e.gen || q.state != reqQueued || q.inst != i {
			continue
		}
		in.waiting--
		if gaveUp := q.arrival + w.timeout; w.now > gaveUp {
			// The gateway gave up on it while it waited.
			w.leftQueueAt(q, gaveUp)
			w.giveUp(e.req)
			continue
		}
		if in.yielding {
			in.yieldLeft--
		}
		in.serving = e.req
		q.state = reqServing
		mean := in.serviceSeconds
		if mean == 0 {
			mean = w.sources[q.src].service
		}
		q.service = secs(q.work * mean)
		w.leftQueue(q)
		w.recordColdWait(q)
		in.lastUsed = w.now
		w.at(w.now+q.service, evServiceDone, i, in.epoch)
		break
	}
	switch {
	case in.head == len(in.queue):
		in.queue, in.head = in.queue[:0], 0
	case in.head > 1024 && 2*in.head > len(in.queue):
		// A queue that never empties keeps only what is ahead.
		in.queue = append(in.queue[:0], in.queue[in.head:]...)
		in.head = 0
	}
}

// serviceDone ends the request a lane was serving.
func (w *world) serviceDone(i int32, epoch uint32) {
	in := &w.insts[i]
	if in.epoch != epoch || in.serving < 0 {
		return
	}
	r := in.serving
	q := &w.reqs[r]
	w.stats.Served++
	if w.now-q.service-q.arrival <= w.slo {
		w.stats.ServedWithinSLO++
	}
	w.release(r)
	in.serving = -1
	in.lastUsed = w.now
	w.serve(i)
	if in.swappable() {
		w.becameIdle(i)
	}
}

// becameIdle lets what waits for a lane to go idle (or to have yielded)
// go on: its drain, and the loads waiting on its node for room.
func (w *world) becameIdle(i int32) {
	in := &w.insts[i]
	if in.drainStep != nil && in.idle() {
		ref := *in.drainStep
		in.drainStep = nil
		w.atStep(w.now, evStepDone, ref)
	}
	if len(w.nodes[in.node].pending) > 0 {
		w.retryPending(in.node)
	}
}

// coldTimeout sends a request still waiting for its lane to load to the
// cloud.
func (w *world) coldTimeout(r int32, gen uint32) {
	q := &w.reqs[r]
	if q.gen != gen || q.state != reqQueued {
		return
	}
	in := &w.insts[q.inst]
	in.waiting--
	w.leftQueue(q)
	w.toCloud(r)
	if in.waiting == 0 && len(in.onLoad) == 0 && in.spec.Residency == pools.OnDemand {
		w.dropPending(q.inst, "") // nobody wants the load any more
	}
	if in.swappable() {
		w.becameIdle(q.inst)
	}
}

// giveUp ends a request the gateway timed out: to the cloud when its
// alias has that fallback, failed otherwise.
func (w *world) giveUp(r int32) {
	if w.aliases[w.reqs[r].alias].hasCloud {
		w.toCloud(r)
	} else {
		w.fail(r)
	}
}

func (w *world) toCloud(r int32) {
	w.stats.ToCloud++
	w.release(r)
}

func (w *world) fail(r int32) {
	w.stats.Failed++
	if w.aliases[w.reqs[r].alias].absent {
		w.stats.AbsentAlias++
	}
	w.release(r)
}

// cutOff ends a lane's work when its node goes away (crashes, hangs, is
// cut off) or the lane stops: the request in service is interrupted and
// fails. The requests waiting go on as the gateway handles them: when
// the lane stopped, to their alias's route; otherwise to the lane again,
// which no longer answers, so the gateway tries the alias's next target
// after its timeout, as for any request sent there.
func (w *world) cutOff(i int32, stopped bool) {
	in := &w.insts[i]
	if in.serving >= 0 {
		w.stats.Interruptions++
		w.fail(in.serving)
		in.serving = -1
	}
	in.epoch++
	if stopped {
		w.requeue(i, true)
		return
	}
	waiting := in.queue[in.head:]
	in.queue, in.head, in.waiting = nil, 0, 0
	for _, e := range waiting {
		if q := &w.reqs[e.req]; q.gen == e.gen && q.state == reqQueued && q.inst == i {
			w.leftQueue(q)
			w.dispatch(e.req)
		}
	}
}

// leftQueue adds the time a request waited at a loading lane to its
// cold wait, as it leaves that lane's queue.
func (w *world) leftQueue(q *request) { w.leftQueueAt(q, w.now) }

// leftQueueAt is leftQueue for a request that left at t.
func (w *world) leftQueueAt(q *request, t time.Duration) {
	if q.cold && t > q.queued {
		q.coldWait += t - q.queued
	}
	q.cold = false
}

// recordColdWait records a request's cold wait, once: when it is served
// or ends otherwise.
func (w *world) recordColdWait(q *request) {
	if q.coldWait > 0 {
		w.stats.coldWait(q.coldWait)
		q.coldWait = 0
	}
}

// requeue sends the requests waiting at a lane on: to the alias's route
// again when the lane drains (the route has moved), to their next
// fallback when it cannot load.
func (w *world) requeue(i int32, toRoute bool) {
	in := &w.insts[i]
	waiting := in.queue[in.head:]
	in.queue, in.head, in.waiting = nil, 0, 0
	for _, e := range waiting {
		q := &w.reqs[e.req]
		if q.gen != e.gen || q.state != reqQueued || q.inst != i {
			continue
		}
		w.leftQueue(q)
		if toRoute {
			q.pos = 0
		} else {
			q.pos++
		}
		w.dispatch(e.req)
	}
}
