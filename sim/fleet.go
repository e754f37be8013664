package sim

import (
	"fmt"
	"slices"
	"time"

	"poolc.dev/poolc/pools"
)

// fleet is the machines and the lane processes on them: what each node
// holds in memory and admits (admission.go), which processes are
// registered, loaded, latched by the guard, draining or stopping, and
// the weights and pod-pool members set up. It asks the gateway to serve,
// requeue or cut off a lane's requests (queues), and tells the plan steps
// waiting for a load how it ended (loads).
type fleet struct {
	*clock
	stats  *stats
	gw     queues
	steps  loads
	health nodeHealth

	nodes   []node
	nodeIdx map[string]int32
	insts   []inst
	instIdx map[instKey]int32
	byLane  map[string][]int32
	// prefetched are the weights on each node, sorted; members the pod
	// pool members as set up.
	prefetched []pools.Prefetch
	members    []pools.MemberState
	// sizes are the weights' sizes of every model any configuration
	// named; serviceSeconds the scenario's mean service time per model.
	sizes          map[string]float64
	serviceSeconds map[string]float64
	// version changes whenever what the controller observes changes.
	version uint64
}

// queues is what the fleet asks of the gateway about lane process i's
// requests.
type queues interface {
	busy(i int32) bool
	waiting(i int32) int
	serve(i int32)
	requeue(i int32, toRoute bool)
	cutOff(i int32, stopped bool)
	evicted(i int32)
}

// nodeHealth is what the fleet asks of the faults about node ni: whether
// it runs (up), answers (reachable), or crashed or hangs (down).
type nodeHealth interface {
	up(ni int32) bool
	reachable(ni int32) bool
	down(ni int32) bool
}

// loads hears how a load a plan step waits for ended.
type loads interface {
	loadEnded(ref stepRef, ok bool, why string)
}

func newFleet(clk *clock, st *stats, steps loads, serviceSeconds map[string]float64) *fleet {
	return &fleet{
		clock: clk, stats: st, steps: steps, serviceSeconds: serviceSeconds,
		nodeIdx: map[string]int32{}, instIdx: map[instKey]int32{}, byLane: map[string][]int32{},
		sizes: map[string]float64{},
	}
}

// node is one machine as the fleet has it: memory in use and the lane
// processes registered on it (its health is the faults', its heartbeats
// the leases').
type node struct {
	name   string
	budget float64 // what admission may place: pools.Node.Budget
	used   float64 // memory of the lanes loaded or loading
	insts  []int32 // lane processes registered here, in (lane) name order
	// pending are lanes waiting for room to load, first come first served.
	pending []int32
}

// inst is one lane process on one node: registered by a start step (or
// the initial fleet) until a stop step removes it. A crash unloads it but
// keeps it registered, as its service definition survives a reboot.
type inst struct {
	spec   pools.LaneState // as started; spec.Loaded is not used
	node   int32
	sizeGB float64
	// serviceSeconds is its model's mean service time, when the scenario
	// sets one (0: each request's alias's).
	serviceSeconds float64

	registered, loaded, loading, pending bool
	// latched is set when the memory guard aborted the lane's load: it
	// does not load again until an operator starts it.
	latched bool
	// draining and stopping lanes take no new requests.
	draining, stopping bool

	// loadEpoch changes when its load is cancelled, so load completions
	// scheduled before do nothing. A load goes on while the node hangs or
	// is cut off: only a crash or a stop cancels it.
	loadEpoch uint32
	lastUsed  time.Duration
	// routed counts the aliases routed here: its priority for eviction.
	routed int
	// yielding marks a busy lane a load on its node waits for: it serves
	// yieldLeft more requests (those waiting when the load asked for
	// room), then takes no more until it is evicted, or until no load
	// waits on its node any more.
	yielding  bool
	yieldLeft int

	// onLoad are plan steps waiting for this lane's load; drainStep is the
	// drain step waiting for it to go idle.
	onLoad    []stepRef
	drainStep *stepRef
	// forPlan marks a load a plan step asked for, for GBLoadedByPlans.
	forPlan bool
}

// servable reports whether the gateway may send the lane a request.
func (in *inst) servable() bool {
	return in.registered && !in.latched && !in.draining && !in.stopping
}

// instKey names a lane process: lane and node.
type instKey struct{ lane, node string }

// addNode adds a machine to the fleet and returns its index.
func (f *fleet) addNode(spec pools.Node) int32 {
	i := int32(len(f.nodes))
	f.nodeIdx[spec.Name] = i
	f.nodes = append(f.nodes, node{name: spec.Name, budget: spec.Budget()})
	return i
}

func (f *fleet) learnSizes(p *pools.Pool) {
	for _, m := range p.Models {
		f.sizes[m.Name] = m.SizeGB
	}
}

// boot sets the fleet up as placed: its lanes registered, the keep-warm
// and preferred ones loaded, its weights and pod-pool members.
func (f *fleet) boot(desired pools.Fleet) {
	for _, l := range desired.Lanes {
		i := f.register(l)
		if l.Residency != pools.OnDemand {
			in := &f.insts[i]
			in.loaded = true
			f.nodes[in.node].used += l.MemoryGB
		}
	}
	f.prefetched = slices.Clone(desired.Prefetched)
	f.members = slices.Clone(desired.Members)
}

// register records a lane process on its node, or updates the one there.
func (f *fleet) register(l pools.LaneState) int32 {
	k := instKey{l.Name, l.Node}
	l.Args = slices.Clone(l.Args)
	i, ok := f.instIdx[k]
	if !ok {
		i = int32(len(f.insts))
		f.insts = append(f.insts, inst{spec: l, node: f.nodeIdx[l.Node]})
		f.instIdx[k] = i
		f.byLane[l.Name] = insertByNode(f, f.byLane[l.Name], i)
		n := &f.nodes[f.nodeIdx[l.Node]]
		n.insts = insertByName(f, n.insts, i)
	}
	in := &f.insts[i]
	in.spec = l
	in.sizeGB = f.sizes[l.Model]
	in.serviceSeconds = f.serviceSeconds[l.Model]
	in.registered, in.latched, in.draining, in.stopping = true, false, false, false
	f.version++
	return i
}

func insertByNode(f *fleet, list []int32, i int32) []int32 {
	name := f.nodes[f.insts[i].node].name
	at, _ := slices.BinarySearchFunc(list, name, func(j int32, n string) int {
		return compareStrings(f.nodes[f.insts[j].node].name, n)
	})
	return slices.Insert(list, at, i)
}

func insertByName(f *fleet, list []int32, i int32) []int32 {
	at, _ := slices.BinarySearchFunc(list, f.insts[i].spec.Name, func(j int32, n string) int {
		return compareStrings(f.insts[j].spec.Name, n)
	})
	return slices.Insert(list, at, i)
}

// empty cuts off a node's requests and drops its lanes from memory; the
// processes are gone, so none is draining or stopping any more.
func (f *fleet) empty(ni int32) {
	for _, i := range f.nodes[ni].insts {
		f.gw.cutOff(i, false)
		f.unload(i)
		in := &f.insts[i]
		if in.draining || in.stopping {
			in.draining, in.stopping = false, false
			f.version++
		}
	}
	f.nodes[ni].pending = nil
}

// dropReplaced removes from a node back from a crash the lane processes
// no alias routes to whose lane runs on another node that answers: the
// controller replaced them while the node was away. (A node whose hang
// or partition ends was never emptied: it keeps its processes, and the
// controller's next plan stops the copies it no longer wants.)
func (f *fleet) dropReplaced(ni int32) {
	for _, i := range f.nodes[ni].insts {
		in := &f.insts[i]
		if !in.registered || in.routed > 0 {
			continue
		}
		for _, j := range f.byLane[in.spec.Name] {
			other := &f.insts[j]
			if j != i && other.registered && !other.stopping && f.health.reachable(other.node) {
				in.registered, in.latched = false, false
				f.version++
				f.stats.note(f.now, "replaced", fmt.Sprintf("%s on %s runs on %s now; %s does not restore it", in.spec.Name, f.nodes[ni].name, f.nodes[other.node].name, f.nodes[ni].name))
				break
			}
		}
	}
}

// cutOff ends the requests at node ni's lane processes: it stopped
// answering.
func (f *fleet) cutOff(ni int32) {
	for _, i := range f.nodes[ni].insts {
		f.gw.cutOff(i, false)
	}
}

// name is node ni's name.
func (f *fleet) name(ni int32) string { return f.nodes[ni].name }

// stop ends a lane process: what it still holds is cut off, its memory
// freed, and what waits for room on its node goes on.
func (f *fleet) stop(i int32) {
	in := &f.insts[i]
	f.gw.cutOff(i, true)
	f.unload(i)
	// The process is gone, and with it the guard's latch.
	in.registered, in.stopping, in.latched, in.draining = false, false, false, false
	f.version++
	if len(f.nodes[in.node].pending) > 0 {
		f.retryPending(in.node)
	}
	f.restorePreferred(in.node)
}
