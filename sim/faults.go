package sim

import (
	"fmt"
	"time"
)

// Faults. A crash stops a node at once: its lanes leave memory, the
// requests at them are cut off, its heartbeats stop; its lanes stay
// registered (their services come back with the node). A hang leaves the
// node up, holding its memory, but answering nothing — requests and
// heartbeats; a partition cuts it off the network while its lanes keep
// running. Both end after their Duration (or, for a hang, at Recover).
// Recover brings a crashed or hung node back empty; it then drops the lanes
// that were replaced on another node while it was away (as a cluster
// manager stops the work it rescheduled when a lost node returns), and
// restores its other keep-warm lanes and, where idle room exists, its
// preferred ones.

// fault is a kind of fault that ends by itself.
type fault uint32

const (
	faultHang fault = iota
	faultPartition
	faultDisk
)

// faults is the health of every node: whether it is up, hung, cut off
// or out of disk, and the faults that end by themselves. It tells the
// fleet (hosts) to empty, cut off, clean up and restore a node, and the
// leases when a node's heartbeats stop or start.
type faults struct {
	*clock
	stats  *stats
	fleet  hosts
	leases *leases
	nodes  []condition
}

// condition is one node's health.
type condition struct {
	up, hung, partitioned, diskFull bool
	// epoch changes when the node crashes or comes back empty; work begun
	// under another epoch is lost.
	epoch uint32
	// faultGen changes with every fault of each kind, so the end of a
	// fault that was overtaken does nothing.
	faultGen [3]uint32
}

// hosts is what faults ask of the fleet about node ni.
type hosts interface {
	name(ni int32) string
	// empty drops everything the node ran from memory; cutOff ends the
	// requests at it; dropReplaced and restore clean up and reload a
	// node back from a crash.
	empty(ni int32)
	cutOff(ni int32)
	dropReplaced(ni int32)
	restore(ni int32)
}

func newFaults(clk *clock, st *stats, fleet hosts, l *leases) *faults {
	return &faults{clock: clk, stats: st, fleet: fleet, leases: l}
}

// add records the health of the next node: up, or down from the start.
func (x *faults) add(down bool) { x.nodes = append(x.nodes, condition{up: !down}) }

// reachable reports whether requests and heartbeats get through to ni.
func (x *faults) reachable(ni int32) bool {
	n := &x.nodes[ni]
	return n.up && !n.hung && !n.partitioned
}

// up reports whether ni runs (it may hang or be cut off); down whether it
// crashed or hangs; full whether its disk refuses weights; epoch is its
// epoch.
func (x *faults) up(ni int32) bool      { return x.nodes[ni].up }
func (x *faults) down(ni int32) bool    { return !x.nodes[ni].up || x.nodes[ni].hung }
func (x *faults) full(ni int32) bool    { return x.nodes[ni].diskFull }
func (x *faults) epoch(ni int32) uint32 { return x.nodes[ni].epoch }

// silent reports whether ni takes connections and answers nothing: it
// hangs and is not cut off.
func (x *faults) silent(ni int32) bool {
	n := &x.nodes[ni]
	return n.up && n.hung && !n.partitioned
}

// probed reports whether ni answers and a health probe has found it so.
func (x *faults) probed(ni int32) bool { return x.reachable(ni) && x.leases.probed(ni) }

// crash stops a node.
func (x *faults) crash(ni int32) {
	n := &x.nodes[ni]
	if !n.up {
		return
	}
	was := x.reachable(ni)
	n.up, n.hung = false, false
	n.epoch++
	n.faultGen[faultHang]++
	x.fleet.empty(ni)
	x.leases.changed(ni, was, x.reachable(ni))
}

// recover brings a crashed or hung node back, empty, and restores it.
func (x *faults) recover(ni int32) {
	n := &x.nodes[ni]
	if n.up && !n.hung {
		return
	}
	was := x.reachable(ni)
	if n.up {
		n.epoch++
		x.fleet.empty(ni)
	}
	n.up, n.hung = true, false
	n.faultGen[faultHang]++
	x.leases.changed(ni, was, x.reachable(ni))
	x.fleet.dropReplaced(ni)
	x.fleet.restore(ni)
}

// hang makes a node stop answering for d (0: until Recover).
func (x *faults) hang(ni int32, d time.Duration) {
	n := &x.nodes[ni]
	if !n.up {
		return
	}
	was := x.reachable(ni)
	n.hung = true
	x.unreachable(ni, was, faultHang, d)
}

// partition cuts a node off the network for d (0: for good).
func (x *faults) partition(ni int32, d time.Duration) {
	was := x.reachable(ni)
	x.nodes[ni].partitioned = true
	x.unreachable(ni, was, faultPartition, d)
}

// unreachable cuts off the requests at a node that stopped answering and
// schedules the fault's end.
func (x *faults) unreachable(ni int32, was bool, f fault, d time.Duration) {
	x.fleet.cutOff(ni)
	x.leases.changed(ni, was, x.reachable(ni))
	x.scheduleEnd(ni, f, d)
}

// fillDisk makes a node refuse prefetches for d (0: for good).
func (x *faults) fillDisk(ni int32, d time.Duration) {
	x.nodes[ni].diskFull = true
	x.scheduleEnd(ni, faultDisk, d)
}

// scheduleEnd makes a fault of kind f end after d (0: never), replacing
// the end of the node's previous fault of that kind.
func (x *faults) scheduleEnd(ni int32, f fault, d time.Duration) {
	n := &x.nodes[ni]
	n.faultGen[f]++
	if d > 0 {
		x.at(x.now+d, evFaultEnd, ni, n.faultGen[f]<<2|uint32(f))
	}
}

// end ends a fault, unless another of its kind overtook it.
func (x *faults) end(ni int32, b uint32) {
	n := &x.nodes[ni]
	f := fault(b & 3)
	if n.faultGen[f] != b>>2 {
		return
	}
	was := x.reachable(ni)
	name := x.fleet.name(ni)
	switch f {
	case faultPartition:
		n.partitioned = false
		x.stats.note(x.now, "partition-end", name+" is reachable again")
	case faultHang:
		n.hung = false
		x.stats.note(x.now, "hang-end", name+" answers again")
	case faultDisk:
		n.diskFull = false
		x.stats.note(x.now, "disk-ok", name+" has room for weights again")
	}
	x.leases.changed(ni, was, x.reachable(ni))
}

// faultDetail describes a fault event for the timeline.
func faultDetail(e Event) string {
	if e.Duration > 0 {
		return fmt.Sprintf("%s for %s", e.Node, e.Duration)
	}
	return e.Node
}
