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

// leases is every node's membership lease, as the controller sees it.
type leases struct {
	*clock
	stats          *stats
	heartbeat, ttl time.Duration
	// slots is how many heartbeat phases the interval is divided into.
	slots int
	nodes []beats
}

// beats is one node's heartbeats. They go out at phase + k*heartbeat
// while the node is reachable, from beatingSince on; lastBeat is the last
// one that got through before it stopped. seenDown is the controller's
// last view; reachableSince is when it last became reachable, for the
// gateway's health probe.
type beats struct {
	name           string
	phase          time.Duration
	beating        bool
	beatingSince   time.Duration
	lastBeat       time.Duration
	seenDown       bool
	reachableSince time.Duration
}

// farPast is a time before any simulation starts.
const farPast = 1 << 60

func newLeases(clk *clock, st *stats, sc Scenario, nodes int) *leases {
	return &leases{
		clock: clk, stats: st, slots: max(1, nodes),
		heartbeat: secs(sc.Lease.HeartbeatSeconds), ttl: secs(sc.Lease.TTLSeconds),
	}
}

// add starts the lease of the next node, heartbeating unless it is down;
// heartbeats are spread over the interval, in node order.
func (l *leases) add(name string, down bool) {
	i := len(l.nodes)
	l.nodes = append(l.nodes, beats{
		name: name, beating: !down, beatingSince: -farPast, lastBeat: -farPast, seenDown: down,
		phase: l.heartbeat * time.Duration(i%l.slots) / time.Duration(l.slots),
	})
}

// floorDiv divides rounding towards minus infinity.
func floorDiv(a, b time.Duration) time.Duration {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// last is the time of node ni's last heartbeat that got through.
func (l *leases) last(ni int32) time.Duration {
	n := &l.nodes[ni]
	if !n.beating {
		return n.lastBeat
	}
	t := n.phase + floorDiv(l.now-n.phase, l.heartbeat)*l.heartbeat
	if t < n.beatingSince {
		return n.lastBeat
	}
	return t
}

// nextBeat is node ni's first heartbeat (or health probe) at or after t.
func (l *leases) nextBeat(ni int32, t time.Duration) time.Duration {
	n := &l.nodes[ni]
	return n.phase - floorDiv(n.phase-t, l.heartbeat)*l.heartbeat
}

// probed reports whether a health probe has reached node ni since it
// last became reachable.
func (l *leases) probed(ni int32) bool {
	return l.now >= l.nextBeat(ni, l.nodes[ni].reachableSince)
}

// lapsed reports whether node ni's lease has lapsed.
func (l *leases) lapsed(ni int32) bool { return l.now-l.last(ni) > l.ttl }

// changed starts or stops node ni's heartbeats after a fault changed
// whether it is reachable.
func (l *leases) changed(ni int32, was, now bool) {
	n := &l.nodes[ni]
	switch {
	case was && !now:
		n.lastBeat = l.last(ni)
		n.beating = false
	case !was && now:
		n.beating, n.beatingSince, n.reachableSince = true, l.now, l.now
	}
}

// downSet returns the nodes whose lease has lapsed, as a key naming them
// and a set, and notes in the timeline the leases that lapsed or came
// back since the controller last looked.
func (l *leases) downSet() (string, map[string]bool) {
	var names []string
	down := map[string]bool{}
	for i := range l.nodes {
		ni := int32(i)
		n := &l.nodes[i]
		d := l.lapsed(ni)
		switch {
		case d && !n.seenDown:
			l.stats.note(l.now, "lease-expired", fmt.Sprintf("%s: no heartbeat since %s", n.name, l.last(ni)))
		case !d && n.seenDown:
			l.stats.note(l.now, "lease-renewed", fmt.Sprintf("%s: heartbeat at %s", n.name, l.last(ni)))
		}
		n.seenDown = d
		if d {
			names = append(names, n.name)
			down[n.name] = true
		}
	}
	return strings.Join(names, ","), down
}
