package sim

import (
	"fmt"
	"strings"
	"time"
)

// Membership leases: every reachable node heartbeats each
// Lease.HeartbeatSeconds (at its own phase), and the controller counts a
// node down only when its lease has lapsed: TTLSeconds after the last
// heartbeat that got through. The heartbeats are computed, not simulated
// one by one.

// floorDiv divides rounding towards minus infinity.
func floorDiv(a, b time.Duration) time.Duration {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// lastHeartbeat is the time of the node's last heartbeat that got through.
func (w *world) lastHeartbeat(n *node) time.Duration {
	if !n.beating {
		return n.lastBeat
	}
	t := n.phase + floorDiv(w.now-n.phase, w.heartbeat)*w.heartbeat
	if t < n.beatingSince {
		return n.lastBeat
	}
	return t
}

// nextBeat is the node's first heartbeat (or health probe) at or after t.
func (w *world) nextBeat(n *node, t time.Duration) time.Duration {
	return n.phase - floorDiv(n.phase-t, w.heartbeat)*w.heartbeat
}

// leaseDown reports whether the node's lease has lapsed.
func (w *world) leaseDown(n *node) bool { return w.now-w.lastHeartbeat(n) > w.ttl }

// reachabilityChanged starts or stops a node's heartbeats after a fault
// changed whether it is reachable.
func (w *world) reachabilityChanged(n *node, was bool) {
	switch now := n.reachable(); {
	case was && !now:
		n.lastBeat = w.lastHeartbeat(n)
		n.beating = false
	case !was && now:
		n.beating, n.beatingSince, n.reachableSince = true, w.now, w.now
	}
}

// downSet returns the nodes whose lease has lapsed, as a key naming them
// and a set, and notes in the timeline the leases that lapsed or came
// back since the controller last looked.
func (w *world) downSet() (string, map[string]bool) {
	var names []string
	down := map[string]bool{}
	for i := range w.fleet.nodes {
		n := &w.fleet.nodes[i]
		d := w.leaseDown(n)
		switch {
		case d && !n.seenDown:
			w.stats.note(w.now, "lease-expired", fmt.Sprintf("%s: no heartbeat since %s", n.name, w.lastHeartbeat(n)))
		case !d && n.seenDown:
			w.stats.note(w.now, "lease-renewed", fmt.Sprintf("%s: heartbeat at %s", n.name, w.lastHeartbeat(n)))
		}
		n.seenDown = d
		if d {
			names = append(names, n.name)
			down[n.name] = true
		}
	}
	return strings.Join(names, ","), down
}

// health is what the gateway asks about a node's answers.
type health interface {
	// reachable: requests get through; silent: the node takes the
	// connection and answers nothing (hung); probed: a health probe has
	// found it answering again.
	reachable(ni int32) bool
	silent(ni int32) bool
	probed(ni int32) bool
}

var _ health = (*world)(nil)

func (w *world) reachable(ni int32) bool { return w.fleet.nodes[ni].reachable() }

func (w *world) silent(ni int32) bool {
	n := &w.fleet.nodes[ni]
	return n.up && n.hung && !n.partitioned
}

func (w *world) probed(ni int32) bool {
	n := &w.fleet.nodes[ni]
	return n.reachable() && w.now >= w.nextBeat(n, n.reachableSince)
}
