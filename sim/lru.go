package sim

import "time"

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
