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

// crash stops a node.
func (w *world) crash(ni int32) {
	n := &w.fleet.nodes[ni]
	if !n.up {
		return
	}
	was := n.reachable()
	n.up, n.hung = false, false
	n.epoch++
	n.faultGen[faultHang]++
	w.fleet.empty(ni)
	w.reachabilityChanged(n, was)
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

// recover brings a crashed or hung node back, empty, and restores it.
func (w *world) recover(ni int32) {
	n := &w.fleet.nodes[ni]
	if n.up && !n.hung {
		return
	}
	was := n.reachable()
	if n.up {
		n.epoch++
		w.fleet.empty(ni)
	}
	n.up, n.hung = true, false
	n.faultGen[faultHang]++
	w.reachabilityChanged(n, was)
	w.fleet.dropReplaced(ni)
	w.fleet.restore(ni)
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
			if j != i && other.registered && !other.stopping && f.nodes[other.node].reachable() {
				in.registered, in.latched = false, false
				f.version++
				f.stats.note(f.now, "replaced", fmt.Sprintf("%s on %s runs on %s now; %s does not restore it", in.spec.Name, f.nodes[ni].name, f.nodes[other.node].name, f.nodes[ni].name))
				break
			}
		}
	}
}

// hang makes a node stop answering for d (0: until Recover).
func (w *world) hang(ni int32, d time.Duration) {
	n := &w.fleet.nodes[ni]
	if !n.up {
		return
	}
	was := n.reachable()
	n.hung = true
	w.unreachable(ni, was, faultHang, d)
}

// partition cuts a node off the network for d (0: for good).
func (w *world) partition(ni int32, d time.Duration) {
	n := &w.fleet.nodes[ni]
	was := n.reachable()
	n.partitioned = true
	w.unreachable(ni, was, faultPartition, d)
}

// unreachable cuts off the requests at a node that stopped answering and
// schedules the fault's end.
func (w *world) unreachable(ni int32, was bool, f fault, d time.Duration) {
	n := &w.fleet.nodes[ni]
	for _, i := range n.insts {
		w.gw.cutOff(i, false)
	}
	w.reachabilityChanged(n, was)
	w.scheduleEnd(ni, f, d)
}

// scheduleEnd makes a fault of kind f end after d (0: never), replacing
// the end of the node's previous fault of that kind.
func (w *world) scheduleEnd(ni int32, f fault, d time.Duration) {
	n := &w.fleet.nodes[ni]
	n.faultGen[f]++
	if d > 0 {
		w.at(w.now+d, evFaultEnd, ni, n.faultGen[f]<<2|uint32(f))
	}
}

// faultEnd ends a fault, unless another of its kind overtook it.
func (w *world) faultEnd(ni int32, b uint32) {
	n := &w.fleet.nodes[ni]
	f := fault(b & 3)
	if n.faultGen[f] != b>>2 {
		return
	}
	was := n.reachable()
	switch f {
	case faultPartition:
		n.partitioned = false
		w.stats.note(w.now, "partition-end", n.name+" is reachable again")
	case faultHang:
		n.hung = false
		w.stats.note(w.now, "hang-end", n.name+" answers again")
	case faultDisk:
		n.diskFull = false
		w.stats.note(w.now, "disk-ok", n.name+" has room for weights again")
	}
	w.reachabilityChanged(n, was)
}

// diskFull makes a node refuse prefetches for d (0: for good).
func (w *world) diskFull(ni int32, d time.Duration) {
	w.fleet.nodes[ni].diskFull = true
	w.scheduleEnd(ni, faultDisk, d)
}

// faultDetail describes a fault event for the timeline.
func faultDetail(e Event) string {
	if e.Duration > 0 {
		return fmt.Sprintf("%s for %s", e.Node, e.Duration)
	}
	return e.Node
}
