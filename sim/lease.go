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

// leases is the lease model: the heartbeat interval and the lease's time
// to live. A node keeps its own heartbeat state (its phase, whether it
// beats and since when); leases computes from it.
type leases struct {
	heartbeat, ttl time.Duration
}

// last is the time of the node's last heartbeat that got through by now.
func (l leases) last(n *node, now time.Duration) time.Duration {
	if !n.beating {
		return n.lastBeat
	}
	t := n.phase + floorDiv(now-n.phase, l.heartbeat)*l.heartbeat
	if t < n.beatingSince {
		return n.lastBeat
	}
	return t
}

// next is the node's first heartbeat (or health probe) at or after t.
func (l leases) next(n *node, t time.Duration) time.Duration {
	return n.phase - floorDiv(n.phase-t, l.heartbeat)*l.heartbeat
}

// down reports whether the node's lease has lapsed by now.
func (l leases) down(n *node, now time.Duration) bool { return now-l.last(n, now) > l.ttl }

// reachabilityChanged starts or stops a node's heartbeats after a fault
// at now changed whether it is reachable (was says whether it was).
func (l leases) reachabilityChanged(n *node, was bool, now time.Duration) {
	switch is := n.reachable(); {
	case was && !is:
		n.lastBeat = l.last(n, now)
		n.beating = false
	case !was && is:
		n.beating, n.beatingSince, n.reachableSince = true, now, now
	}
}

// downSet returns the nodes whose lease has lapsed, as a key naming them
// and a set, and notes in the timeline the leases that lapsed or came
// back since the controller last looked.
func (w *world) downSet() (string, map[string]bool) {
	var names []string
	down := map[string]bool{}
	for i := range w.nodes {
		n := &w.nodes[i]
		d := w.lease.down(n, w.now)
		switch {
		case d && !n.seenDown:
			w.note(w.now, "lease-expired", fmt.Sprintf("%s: no heartbeat since %s", n.name, w.lease.last(n, w.now)))
		case !d && n.seenDown:
			w.note(w.now, "lease-renewed", fmt.Sprintf("%s: heartbeat at %s", n.name, w.lease.last(n, w.now)))
		}
		n.seenDown = d
		if d {
			names = append(names, n.name)
			down[n.name] = true
		}
	}
	return strings.Join(names, ","), down
}
