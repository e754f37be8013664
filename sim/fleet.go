package sim

import (
	"time"

	"poolc.dev/poolc/pools"
)

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

// alias is the gateway's entry for a public name: where it routes and the
// fallbacks tried when that cannot serve.
type alias struct {
	name string
	// route is the lane process requests go to, or toCloud, or noRoute.
	route     int32
	fallbacks []string
	hasCloud  bool
	// absent marks an alias the scenario demands that no configuration
	// in force has declared: its requests fail.
	absent bool
}

// Route targets that are not lane processes.
const (
	noRoute int32 = -1
	toCloud int32 = -2
)
