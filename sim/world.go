package sim

import (
	"time"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/pools"
)

// world is one simulation: the event loop (simulate.go) over the clock,
// handing each event to the component that owns what it changes — the
// fleet (nodes, lane processes), the admission (memory, loads, the
// guard), the gateway (requests, queues) and its routing table (aliases,
// routes), the faults and the leases, the operator (the configuration in
// force), the executor and its actuator (plans carried out), the
// controller loop — and the stats they all report to.
type world struct {
	clock
	sc  Scenario
	opt Options
	end time.Duration

	fleet    *fleet
	adm      *admission
	guard    *guard
	gw       *gateway
	routing  *routing
	faults   *faults
	leases   *leases
	exec     *executor
	op       *operator
	stats    stats
	ctl      *loop
	progress time.Duration // next progress report
}

func newWorld(pool *pools.Pool, sc Scenario, opt Options) *world {
	w := &world{
		sc: sc, opt: opt, end: sc.Duration,
	}
	w.exec = &executor{clock: &w.clock, stats: &w.stats, timeout: sc.StepTimeout}
	w.guard = &guard{}
	recent := &lru{clock: &w.clock}
	w.adm = newAdmission(&w.clock, &w.stats, w.guard, recent, &waits{steps: w.exec})
	w.fleet = newFleet(&w.clock, &w.stats, w.adm, w.guard, sc.ModelServiceSeconds)
	w.adm.fleet = w.fleet
	lanes := fleetLanes{w.fleet, w.adm, recent}
	w.leases = newLeases(&w.clock, &w.stats, sc, len(pool.Nodes))
	w.faults = newFaults(&w.clock, &w.stats, lanes, w.leases)
	w.routing = newRouting(lanes, w.faults)
	w.gw = newGateway(&w.clock, &w.stats, lanes, w.faults, w.routing, sc)
	w.fleet.gw, w.fleet.health = w.gw, w.faults
	w.adm.gw, w.adm.health = w.gw, w.faults
	w.op = &operator{
		clock: &w.clock, stats: &w.stats, fleet: w.fleet, adm: w.adm, guard: w.guard, faults: w.faults, join: w.addNode,
		cfg: pool, allowAbsent: opt.AllowAbsent, loadConfig: opt.LoadConfig,
	}
	w.exec.act = &actuator{clock: &w.clock, links: sc.Links, fleet: w.fleet, adm: w.adm, guard: w.guard, gw: w.gw, routing: w.routing, faults: w.faults}
	if opt.Mode != ModeOff {
		w.gw.demand = newMeter(secs(sc.Controller.DemandWindowSeconds))
	}
	w.fleet.learnSizes(pool)
	down := map[string]bool{}
	for _, e := range sc.Events {
		if e.At == 0 && e.Kind == Crash {
			down[e.Node] = true
		}
	}
	for _, n := range pool.Nodes {
		w.addNode(n, down[n.Name])
	}
	w.routing.setAliases(pool)
	desired := place.Place(place.Input{Pool: pool, Down: down}).Desired
	w.fleet.boot(desired)
	for _, r := range desired.Routes {
		w.routing.setRoute(r)
	}
	w.gw.addDemand(pool, sc)
	for i, e := range sc.Events {
		switch {
		case e.At == 0 && e.Kind == Crash:
			w.stats.note(0, "node-crash", e.Node+" is down from the start")
		case e.At <= w.end:
			w.at(e.At, evScenario, int32(i), 0)
		}
	}
	if opt.Mode != ModeOff {
		w.ctl = newLoop(w)
		w.exec.finished = w.ctl.finished
	}
	return w
}

// addNode adds a machine to the fleet, the faults and the leases, up
// (heartbeating) or down.
func (w *world) addNode(spec pools.Node, down bool) {
	w.fleet.addNode(spec)
	w.faults.add(down)
	w.leases.add(spec.Name, down)
}
