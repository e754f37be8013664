package sim

import "time"

// guard is the memory guard's latches: a lane process whose load the
// guard aborted (admission.guardAbort) does not load again until an
// operator starts it or the process is registered anew.
type guard struct{ latches []bool }

// latched reports whether lane process i is latched; latch and unlatch
// set and clear that.
func (g *guard) latched(i int32) bool { return int(i) < len(g.latches) && g.latches[i] }

func (g *guard) latch(i int32) {
	for int(i) >= len(g.latches) {
		g.latches = append(g.latches, false)
	}
	g.latches[i] = true
}

func (g *guard) unlatch(i int32) {
	if int(i) < len(g.latches) {
		g.latches[i] = false
	}
}

// lru is when each lane process last served a request or finished
// loading: admission evicts the least recently used first.
type lru struct {
	*clock
	last []time.Duration
}

// used records that lane process i serves now; lastUsed is when it last
// did (0: never).
func (l *lru) used(i int32) {
	for int(i) >= len(l.last) {
		l.last = append(l.last, 0)
	}
	l.last[i] = l.now
}

func (l *lru) lastUsed(i int32) time.Duration {
	if int(i) < len(l.last) {
		return l.last[i]
	}
	return 0
}
