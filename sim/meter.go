package sim

import "time"

// meter counts each alias's arrivals per minute, as a gateway's metrics
// would, for the controller's view of demand: the mean rate over the last
// whole minutes of a window.
type meter struct {
	window int       // minutes averaged
	counts [][]int32 // per alias, a ring of window+1 per-minute counts
	sums   []int32   // per alias, the sum of its ring
	minute []int64   // per alias, the minute its ring ends at
}

func newMeter(window time.Duration) *meter {
	return &meter{window: max(1, int(window/time.Minute))}
}

// add counts an arrival for alias a at t.
func (m *meter) add(a int32, t time.Duration) {
	ring := m.roll(a, t)
	ring[m.slot(int64(t/time.Minute))]++
	m.sums[a]++
}

// rate is alias a's mean arrivals per minute over the whole minutes of
// the window before t. The minute in progress is left out, as it is only
// partly counted; before a whole window has passed the minutes not yet
// seen count as quiet, so a few early requests do not read as a busy
// lane.
func (m *meter) rate(a int32, t time.Duration) float64 {
	ring := m.roll(a, t)
	return float64(m.sums[a]-ring[m.slot(int64(t/time.Minute))]) / float64(m.window)
}

func (m *meter) slot(minute int64) int { return int(minute % int64(m.window+1)) }

// roll moves alias a's ring on to the minute of t, clearing the minutes
// it passes, and returns it.
func (m *meter) roll(a int32, t time.Duration) []int32 {
	for int(a) >= len(m.counts) {
		m.counts = append(m.counts, make([]int32, m.window+1))
		m.sums = append(m.sums, 0)
		m.minute = append(m.minute, 0)
	}
	ring, now := m.counts[a], int64(t/time.Minute)
	for k := m.minute[a] + 1; k <= now && k <= m.minute[a]+int64(m.window)+1; k++ {
		s := m.slot(k)
		m.sums[a] -= ring[s]
		ring[s] = 0
	}
	if now > m.minute[a] {
		m.minute[a] = now
	}
	return ring
}
