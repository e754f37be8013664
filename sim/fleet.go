package sim

import (
	"cmp"
	"fmt"
	"slices"

	"poolc.dev/poolc/pools"
)

// fleet is the machines and the lane processes on them: which processes
// are registered on each node, draining or stopping, the aliases routed
// to each, and the weights and pod-pool members set up. What each node
// holds in memory is the admission's (admission.go). It asks the gateway
// to cut off a lane's requests (queues).
type fleet struct {
	*clock
	stats  *stats
	adm    *admission
	guard  *guard
	gw     queues
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

func newFleet(clk *clock, st *stats, adm *admission, g *guard, serviceSeconds map[string]float64) *fleet {
	return &fleet{
		clock: clk, stats: st, adm: adm, guard: g, serviceSeconds: serviceSeconds,
		nodeIdx: map[string]int32{}, instIdx: map[instKey]int32{}, byLane: map[string][]int32{},
		sizes: map[string]float64{},
	}
}

// node is one machine as the fleet has it: the lane processes registered
// on it (its memory is the admission's, its health the faults', its
// heartbeats the leases').
type node struct {
	name  string
	insts []int32 // lane processes registered here, in (lane) name order
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

	registered bool
	// draining and stopping lanes take no new requests.
	draining, stopping bool
	// routed counts the aliases routed here: its priority for eviction.
	routed int
	// drainStep is the drain step waiting for it to go idle.
	drainStep *stepRef
}

// instKey names a lane process: lane and node.
type instKey struct{ lane, node string }

// addNode adds a machine to the fleet, and its budget to the admission,
// and returns its index.
func (f *fleet) addNode(spec pools.Node) int32 {
	i := int32(len(f.nodes))
	f.nodeIdx[spec.Name] = i
	f.nodes = append(f.nodes, node{name: spec.Name})
	f.adm.setBudget(i, spec.Budget())
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
			f.adm.resident(i)
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
		f.adm.track(i)
		f.byLane[l.Name] = insertByNode(f, f.byLane[l.Name], i)
		n := &f.nodes[f.nodeIdx[l.Node]]
		n.insts = insertByName(f, n.insts, i)
	}
	in := &f.insts[i]
	in.spec = l
	in.sizeGB = f.sizes[l.Model]
	in.serviceSeconds = f.serviceSeconds[l.Model]
	in.registered, in.draining, in.stopping = true, false, false
	f.guard.unlatch(i)
	f.version++
	return i
}

func insertByNode(f *fleet, list []int32, i int32) []int32 {
	name := f.nodes[f.insts[i].node].name
	at, _ := slices.BinarySearchFunc(list, name, func(j int32, n string) int {
		return cmp.Compare(f.nodes[f.insts[j].node].name, n)
	})
	return slices.Insert(list, at, i)
}

func insertByName(f *fleet, list []int32, i int32) []int32 {
	at, _ := slices.BinarySearchFunc(list, f.insts[i].spec.Name, func(j int32, n string) int {
		return cmp.Compare(f.insts[j].spec.Name, n)
	})
	return slices.Insert(list, at, i)
}

// empty cuts off a node's requests and drops its lanes from memory; the
// processes are gone, so none is draining or stopping any more.
func (f *fleet) empty(ni int32) {
	for _, i := range f.nodes[ni].insts {
		f.gw.cutOff(i, false)
		f.adm.unload(i)
		in := &f.insts[i]
		if in.draining || in.stopping {
			in.draining, in.stopping = false, false
			f.version++
		}
	}
	f.adm.forgetWaiting(ni)
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
				in.registered = false
				f.guard.unlatch(i)
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
	f.adm.unload(i)
	// The process is gone, and with it the guard's latch.
	in.registered, in.stopping, in.draining = false, false, false
	f.guard.unlatch(i)
	f.version++
	f.adm.retryPending(in.node)
	f.adm.restorePreferred(in.node)
}

// process is lane process i as the fleet has it; onNode lists the lane
// processes registered on node ni, in (lane) name order.
func (f *fleet) process(i int32) *inst   { return &f.insts[i] }
func (f *fleet) onNode(ni int32) []int32 { return f.nodes[ni].insts }

// changed notes that what the controller observes changed; changes is
// the version that counts such changes, which the controller's loop
// compares to know whether the fleet is as it last planned from.
func (f *fleet) changed()        { f.version++ }
func (f *fleet) changes() uint64 { return f.version }

// changeResidency gives instance i lane l's residency and reports
// whether the step waits for its load (the lane now stays loaded); the
// caller ends the step otherwise.
func (f *fleet) changeResidency(i int32, l pools.LaneState, ref stepRef) bool {
	in := &f.insts[i]
	in.spec.Residency = l.Residency
	f.version++
	if l.Residency != pools.OnDemand && !f.adm.loaded(i) {
		f.adm.waitForLoad(i, ref)
		return true
	}
	f.adm.retryPending(in.node) // a downgraded lane may make room
	return false
}
