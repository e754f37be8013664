package sim

import (
	"fmt"
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

// gateway is the gateway's requests from arrival to their end, the
// demand sources that make them, and each lane process's queue; where a
// request goes is the routing table's (routing.go). It asks the fleet and
// the admission (lanes) whether a lane can serve and to load it; they ask
// it to serve, requeue or cut off a lane's requests (queues).
type gateway struct {
	clk   *clock
	st    *stats
	fleet lanes
	nodes health
	end   time.Duration
	// waitLimit, timeout and slo are the scenario's Gateway and SLO.
	waitLimit, timeout, slo time.Duration
	// demand counts the arrivals per alias for the controller; nil when
	// no controller reads it.
	demand *meter

	routing *routing
	reqs    []request
	free    []int32
	sources []source
	lines   []line // per lane process
}

// lanes is what the gateway asks of the fleet about lane processes (i)
// and their nodes (ni).
type lanes interface {
	// processes lists a lane's processes, in node order; lookup finds a
	// registered one; spec is one's lane as started.
	processes(lane string) []int32
	lookup(lane, node string) (int32, bool)
	spec(i int32) *pools.LaneState
	nodeOf(i int32) int32
	// servable: the gateway may send it requests; loaded: it is in memory.
	servable(i int32) bool
	loaded(i int32) bool
	// admit asks for the lane's load; ready says whether it may take its
	// next request, take that it does (returning its model's mean service
	// seconds, 0 when unset), used that it finished one.
	admit(i int32)
	ready(i int32) bool
	take(i int32) float64
	used(i int32)
	// freed: the lane may have gone idle; abandoned: a request waiting
	// for its load left; routedTo: an alias moved from one process to
	// another (either may be noRoute or toCloud).
	freed(i int32)
	abandoned(i int32)
	routedTo(from, to int32)
}

// health is what the gateway asks about node ni's answers: whether
// requests get through (reachable), whether it takes the connection and
// answers nothing (silent: it hangs), whether a health probe has found it
// answering again (probed).
type health interface {
	reachable(ni int32) bool
	silent(ni int32) bool
	probed(ni int32) bool
}

// line is a lane process's queue at the gateway.
type line struct {
	queue   []queued // requests waiting, oldest first, from head
	head    int
	waiting int   // live requests in queue
	serving int32 // the request in service, or -1
	// epoch changes when the lane's work is cut off (a fault, a stop), so
	// service completions scheduled before do nothing.
	epoch uint32
}

// queued is a request in a lane's queue; gen tells a stale entry (the
// request left, its slot was reused) from a live one.
type queued struct {
	req int32
	gen uint32
}

func newGateway(clk *clock, st *stats, fleet lanes, nodes health, rt *routing, sc Scenario) *gateway {
	return &gateway{
		clk: clk, st: st, fleet: fleet, nodes: nodes, routing: rt, end: sc.Duration,
		waitLimit: secs(sc.Gateway.WaitLimitSeconds), timeout: secs(sc.Gateway.RequestTimeoutSeconds),
		slo: secs(sc.SLO.WaitSeconds),
	}
}

// line returns lane process i's queue.
func (g *gateway) line(i int32) *line {
	for int(i) >= len(g.lines) {
		g.lines = append(g.lines, line{serving: -1})
	}
	return &g.lines[i]
}

// busy reports whether lane process i serves a request; waiting is how
// many wait for it.
func (g *gateway) busy(i int32) bool   { return g.line(i).serving >= 0 }
func (g *gateway) waiting(i int32) int { return g.line(i).waiting }

// demandFor is the request rate of alias name the demand meter has
// counted, per minute, if the gateway knows the alias.
func (g *gateway) demandFor(name string) (float64, bool) {
	i, ok := g.routing.find(name)
	if !ok {
		return 0, false
	}
	return g.demand.rate(i, g.clk.now), true
}

// addDemand makes the demand sources of a scenario, adding the aliases
// they name that pool does not declare, whose requests fail, and
// schedules each source's first arrival.
func (g *gateway) addDemand(pool *pools.Pool, sc Scenario) {
	for _, d := range sc.Demand {
		if _, ok := g.routing.find(d.Alias); !ok {
			g.routing.entry(g.routing.alias(d.Alias)).absent = true
			g.st.note(0, "absent", fmt.Sprintf("pool %s declares no alias %q: its requests fail", pool.Name, d.Alias))
		}
	}
	nth := map[string]int{}
	for i, d := range sc.Demand {
		a, _ := g.routing.find(d.Alias)
		g.sources = append(g.sources, newSource(d, a, sc.Seed, nth[d.Alias]))
		nth[d.Alias]++
		g.nextArrival(int32(i), 0)
	}
}

// nextArrival schedules source i's next request after t.
func (g *gateway) nextArrival(i int32, t time.Duration) {
	s := &g.sources[i]
	at, work, ok := s.next(t, g.end)
	if !ok {
		return
	}
	r := g.newRequest(i, at, work)
	g.clk.at(at, evArrival, r, g.reqs[r].gen)
}

// finish fails the requests still in flight when the run ends.
func (g *gateway) finish() {
	for i := range g.reqs {
		if g.reqs[i].state != reqFree {
			g.fail(int32(i))
		}
	}
}

// newRequest makes a request of source src arriving at at, with work
// times its mean service time to be served.
func (g *gateway) newRequest(src int32, at time.Duration, work float64) int32 {
	var r int32
	if n := len(g.free); n > 0 {
		r, g.free = g.free[n-1], g.free[:n-1]
	} else {
		r = int32(len(g.reqs))
		g.reqs = append(g.reqs, request{})
	}
	q := &g.reqs[r]
	q.src, q.alias, q.inst, q.pos, q.state, q.cold = src, g.sources[src].alias, -1, 0, reqArriving, false
	q.coldWait = 0
	q.arrival, q.work = at, work
	return r
}

func (g *gateway) release(r int32) {
	q := &g.reqs[r]
	g.recordColdWait(q)
	q.state = reqFree
	q.gen++
	g.free = append(g.free, r)
}

// arrive handles a request's arrival and schedules its source's next one.
func (g *gateway) arrive(r int32) {
	g.st.Requests++
	if g.demand != nil {
		g.demand.add(g.reqs[r].alias, g.clk.now)
	}
	g.nextArrival(g.reqs[r].src, g.clk.now)
	g.dispatch(r)
}

// dispatch sends a request to the first target from its position on that
// can take it.
func (g *gateway) dispatch(r int32) {
	q := &g.reqs[r]
	a := g.routing.entry(q.alias)
	for ; ; q.pos++ {
		target := noRoute
		switch {
		case q.pos == 0:
			target = a.route
		case int(q.pos) > len(a.fallbacks):
			g.fail(r)
			return
		case a.fallbacks[q.pos-1] == pools.Cloud:
			target = toCloud
		default:
			target = g.routing.laneTarget(a.fallbacks[q.pos-1])
		}
		if target == toCloud {
			g.toCloud(r)
			return
		}
		if target < 0 || !g.fleet.servable(target) {
			continue
		}
		ni := g.fleet.nodeOf(target)
		if g.routing.isBad(ni) {
			continue
		}
		if !g.nodes.reachable(ni) {
			timeout := connectTimeout
			if g.nodes.silent(ni) {
				timeout = g.waitLimit
			}
			q.state, q.inst = reqConnecting, target
			q.pos++
			g.clk.at(g.clk.now+timeout, evConnectFailed, r, q.gen)
			return
		}
		g.enqueue(target, r)
		return
	}
}

// connectFailed handles a request whose node did not answer.
func (g *gateway) connectFailed(r int32, gen uint32) {
	q := &g.reqs[r]
	if q.gen != gen || q.state != reqConnecting {
		return
	}
	g.routing.markBad(g.fleet.nodeOf(q.inst))
	g.dispatch(r)
}

// enqueue puts a request in a lane's queue, loading the lane if needed.
func (g *gateway) enqueue(i, r int32) {
	q := &g.reqs[r]
	l := g.line(i)
	q.state, q.inst, q.queued = reqQueued, i, g.clk.now
	l.queue = append(l.queue, queued{r, q.gen})
	l.waiting++
	if g.fleet.loaded(i) {
		g.serve(i)
		return
	}
	q.cold = true
	if g.routing.entry(q.alias).hasCloud {
		g.clk.at(g.clk.now+g.waitLimit, evColdTimeout, r, q.gen)
	}
	g.fleet.admit(i)
}

// serve starts the next request of an idle, loaded lane.
func (g *gateway) serve(i int32) {
	l := g.line(i)
	if l.serving >= 0 || !g.fleet.ready(i) {
		return
	}
	now := g.clk.now
	for l.head < len(l.queue) {
		e := l.queue[l.head]
		l.head++
		q := &g.reqs[e.req]
		if q.gen != e.gen || q.state != reqQueued || q.inst != i {
			continue
		}
		l.waiting--
		if gaveUp := q.arrival + g.timeout; now > gaveUp {
			// The gateway gave up on it while it waited.
			g.leftQueueAt(q, gaveUp)
			g.giveUp(e.req)
			continue
		}
		mean := g.fleet.take(i)
		l.serving = e.req
		q.state = reqServing
		if mean == 0 {
			mean = g.sources[q.src].service
		}
		q.service = secs(q.work * mean)
		g.leftQueue(q)
		g.recordColdWait(q)
		g.clk.at(now+q.service, evServiceDone, i, l.epoch)
		break
	}
	switch {
	case l.head == len(l.queue):
		l.queue, l.head = l.queue[:0], 0
	case l.head > 1024 && 2*l.head > len(l.queue):
		// A queue that never empties keeps only what is ahead.
		l.queue = append(l.queue[:0], l.queue[l.head:]...)
		l.head = 0
	}
}

// serviceDone ends the request a lane was serving.
func (g *gateway) serviceDone(i int32, epoch uint32) {
	l := g.line(i)
	if l.epoch != epoch || l.serving < 0 {
		return
	}
	r := l.serving
	q := &g.reqs[r]
	g.st.Served++
	if g.clk.now-q.service-q.arrival <= g.slo {
		g.st.ServedWithinSLO++
	}
	g.release(r)
	l.serving = -1
	g.fleet.used(i)
	g.serve(i)
	g.fleet.freed(i)
}

// coldTimeout sends a request still waiting for its lane to load to the
// cloud.
func (g *gateway) coldTimeout(r int32, gen uint32) {
	q := &g.reqs[r]
	if q.gen != gen || q.state != reqQueued {
		return
	}
	g.line(q.inst).waiting--
	g.leftQueue(q)
	g.toCloud(r)
	g.fleet.abandoned(q.inst)
}

// giveUp ends a request the gateway timed out: to the cloud when its
// alias has that fallback, failed otherwise.
func (g *gateway) giveUp(r int32) {
	if g.routing.entry(g.reqs[r].alias).hasCloud {
		g.toCloud(r)
	} else {
		g.fail(r)
	}
}

func (g *gateway) toCloud(r int32) {
	g.st.ToCloud++
	g.release(r)
}

func (g *gateway) fail(r int32) {
	g.st.Failed++
	if g.routing.entry(g.reqs[r].alias).absent {
		g.st.AbsentAlias++
	}
	g.release(r)
}

// cutOff ends a lane's work when its node goes away (crashes, hangs, is
// cut off) or the lane stops: the request in service is interrupted and
// fails. The requests waiting go on as the gateway handles them: when
// the lane stopped, to their alias's route; otherwise to the lane again,
// which no longer answers, so the gateway tries the alias's next target
// after its timeout, as for any request sent there.
func (g *gateway) cutOff(i int32, stopped bool) {
	l := g.line(i)
	if l.serving >= 0 {
		g.st.Interruptions++
		g.fail(l.serving)
		l.serving = -1
	}
	l.epoch++
	if stopped {
		g.requeue(i, true)
		return
	}
	waiting := l.queue[l.head:]
	l.queue, l.head, l.waiting = nil, 0, 0
	for _, e := range waiting {
		if q := &g.reqs[e.req]; q.gen == e.gen && q.state == reqQueued && q.inst == i {
			g.leftQueue(q)
			g.dispatch(e.req)
		}
	}
}

// evicted starts the cold wait again of the requests waiting at a lane
// that admission unloaded: they wait for it to load again.
func (g *gateway) evicted(i int32) {
	l := g.line(i)
	now := g.clk.now
	for _, e := range l.queue[l.head:] {
		if q := &g.reqs[e.req]; q.gen == e.gen && q.state == reqQueued && q.inst == i {
			q.cold, q.queued = true, now
			if g.routing.entry(q.alias).hasCloud {
				g.clk.at(now+g.waitLimit, evColdTimeout, e.req, q.gen)
			}
		}
	}
}

// leftQueue adds the time a request waited at a loading lane to its
// cold wait, as it leaves that lane's queue.
func (g *gateway) leftQueue(q *request) { g.leftQueueAt(q, g.clk.now) }

// leftQueueAt is leftQueue for a request that left at t.
func (g *gateway) leftQueueAt(q *request, t time.Duration) {
	if q.cold && t > q.queued {
		q.coldWait += t - q.queued
	}
	q.cold = false
}

// recordColdWait records a request's cold wait, once: when it is served
// or ends otherwise.
func (g *gateway) recordColdWait(q *request) {
	if q.coldWait > 0 {
		g.st.coldWait(q.coldWait)
		q.coldWait = 0
	}
}

// requeue sends the requests waiting at a lane on: to the alias's route
// again when the lane drains (the route has moved), to their next
// fallback when it cannot load.
func (g *gateway) requeue(i int32, toRoute bool) {
	l := g.line(i)
	waiting := l.queue[l.head:]
	l.queue, l.head, l.waiting = nil, 0, 0
	for _, e := range waiting {
		q := &g.reqs[e.req]
		if q.gen != e.gen || q.state != reqQueued || q.inst != i {
			continue
		}
		g.leftQueue(q)
		if toRoute {
			q.pos = 0
		} else {
			q.pos++
		}
		g.dispatch(e.req)
	}
}
