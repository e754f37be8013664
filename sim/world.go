package sim

import (
	"slices"
	"time"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/pools"
)

// world is one simulation: the clock, the fleet model, the gateway, the
// demand, the controller loop and what is measured.
type world struct {
	clock
	sc  Scenario
	opt Options
	end time.Duration

	heartbeat, ttl time.Duration
	// slots is how many heartbeat phases the interval is divided into.
	slots int

	// cfg is the configuration in force; profile (when set) and cordons
	// are the operator's changes to it; cfgVer counts changes of the three.
	cfg     *pools.Pool
	profile string
	cordons []string
	cfgVer  uint64

	nodes   []node
	nodeIdx map[string]int32
	insts   []inst
	instIdx map[instKey]int32
	byLane  map[string][]int32
	// prefetched are the weights on each node, sorted; members the pod
	// pool members as set up.
	prefetched []pools.Prefetch
	members    []pools.MemberState
	// sizes are the weights' sizes of every model any configuration named.
	sizes map[string]float64
	// version changes whenever what the controller observes changes.
	version uint64

	gw       *gateway
	stats    stats
	ctl      *loop
	progress time.Duration // next progress report
}

func newWorld(pool *pools.Pool, sc Scenario, opt Options) *world {
	w := &world{
		sc: sc, opt: opt, end: sc.Duration,
		heartbeat: secs(sc.Lease.HeartbeatSeconds), ttl: secs(sc.Lease.TTLSeconds),
		cfg:     pool,
		nodeIdx: map[string]int32{}, instIdx: map[instKey]int32{}, byLane: map[string][]int32{},
		sizes: map[string]float64{}, slots: max(1, len(pool.Nodes)),
	}
	w.gw = newGateway(&w.clock, &w.stats, w, sc)
	if opt.Mode != ModeOff {
		w.gw.demand = newMeter(secs(sc.Controller.DemandWindowSeconds))
	}
	w.learnSizes(pool)
	down := map[string]bool{}
	for _, e := range sc.Events {
		if e.At == 0 && e.Kind == Crash {
			down[e.Node] = true
		}
	}
	for _, n := range pool.Nodes {
		w.addNode(n, down[n.Name])
	}
	w.gw.setAliases(pool)
	desired := place.Place(place.Input{Pool: pool, Down: down}).Desired
	for _, l := range desired.Lanes {
		i := w.register(l)
		if l.Residency != pools.OnDemand {
			in := &w.insts[i]
			in.loaded = true
			w.nodes[in.node].used += l.MemoryGB
		}
	}
	for _, r := range desired.Routes {
		w.gw.setRoute(r)
	}
	w.prefetched = slices.Clone(desired.Prefetched)
	w.members = slices.Clone(desired.Members)
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
	}
	return w
}

// addNode adds a machine to the model, up (heartbeating) or down.
func (w *world) addNode(spec pools.Node, down bool) {
	i := int32(len(w.nodes))
	w.nodeIdx[spec.Name] = i
	w.nodes = append(w.nodes, node{
		name: spec.Name, budget: spec.Budget(), up: !down,
		beating: !down, beatingSince: -farPast, lastBeat: -farPast, seenDown: down,
		// Heartbeats are spread over the interval, in node order.
		phase: w.heartbeat * time.Duration(int(i)%w.slots) / time.Duration(w.slots),
	})
}

// farPast is a time before any simulation starts.
const farPast = 1 << 60

func (w *world) learnSizes(p *pools.Pool) {
	for _, m := range p.Models {
		w.sizes[m.Name] = m.SizeGB
	}
}

// register records a lane process on its node, or updates the one there.
func (w *world) register(l pools.LaneState) int32 {
	k := instKey{l.Name, l.Node}
	l.Args = slices.Clone(l.Args)
	i, ok := w.instIdx[k]
	if !ok {
		i = int32(len(w.insts))
		w.insts = append(w.insts, inst{spec: l, node: w.nodeIdx[l.Node]})
		w.instIdx[k] = i
		w.byLane[l.Name] = insertByNode(w, w.byLane[l.Name], i)
		n := &w.nodes[w.nodeIdx[l.Node]]
		n.insts = insertByName(w, n.insts, i)
	}
	in := &w.insts[i]
	in.spec = l
	in.sizeGB = w.sizes[l.Model]
	in.serviceSeconds = w.sc.ModelServiceSeconds[l.Model]
	in.registered, in.latched, in.draining, in.stopping = true, false, false, false
	w.version++
	return i
}

func insertByNode(w *world, list []int32, i int32) []int32 {
	name := w.nodes[w.insts[i].node].name
	at, _ := slices.BinarySearchFunc(list, name, func(j int32, n string) int {
		return compareStrings(w.nodes[w.insts[j].node].name, n)
	})
	return slices.Insert(list, at, i)
}

func insertByName(w *world, list []int32, i int32) []int32 {
	at, _ := slices.BinarySearchFunc(list, w.insts[i].spec.Name, func(j int32, n string) int {
		return compareStrings(w.insts[j].spec.Name, n)
	})
	return slices.Insert(list, at, i)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
