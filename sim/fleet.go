package sim

import (
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
	stats *stats
	gw    queues
	steps loads

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

// node is one machine as the model has it: memory in use, the lane
// processes registered on it, its faults, its heartbeats and what the
// gateway thinks of it.
type node struct {
	name   string
	budget float64 // what admission may place: pools.Node.Budget
	used   float64 // memory of the lanes loaded or loading
	insts  []int32 // lane processes registered here, in (lane) name order
	// pending are lanes waiting for room to load, first come first served.
	pending []int32

	up, hung, partitioned, diskFull bool
	// epoch changes when the node crashes or comes back empty; work begun
	// under another epoch is lost.
	epoch uint32
	// faultGen changes with every fault of each kind, so the end of a
	// fault that was overtaken does nothing.
	faultGen [3]uint32

	// reachableSince is when it last became reachable, for the
	// gateway's health probe.
	reachableSince time.Duration

	// Heartbeats go out at phase + k*heartbeat while the node is
	// reachable, from beatingSince on; lastBeat is the last one that got
	// through before it stopped. seenDown is the controller's last view.
	phase        time.Duration
	beating      bool
	beatingSince time.Duration
	lastBeat     time.Duration
	seenDown     bool
}

// reachable reports whether requests and heartbeats get through.
func (n *node) reachable() bool { return n.up && !n.hung && !n.partitioned }

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

// farPast is a time before any simulation starts.
const farPast = 1 << 60

// addNode adds a machine to the fleet, up or down, and returns its index.
func (f *fleet) addNode(spec pools.Node, down bool) int32 {
	i := int32(len(f.nodes))
	f.nodeIdx[spec.Name] = i
	f.nodes = append(f.nodes, node{
		name: spec.Name, budget: spec.Budget(), up: !down,
		beating: !down, beatingSince: -farPast, lastBeat: -farPast, seenDown: down,
	})
	return i
}

func (f *fleet) learnSizes(p *pools.Pool) {
	for _, m := range p.Models {
		f.sizes[m.Name] = m.SizeGB
	}
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
