package sim

import "time"

// meter counts each alias's arrivals per minute over a sliding window, as
// a gateway's metrics would, for the controller's view of demand.
type meter struct {
	window int       // minutes
	counts [][]int32 // per alias, a ring of per-minute counts
	sums   []int32   // per alias, the sum of its ring
	minute []int64   // per alias, the minute its ring ends at
}

func newMeter(window time.Duration) *meter {
	return &meter{window: max(1, int(window/time.Minute))}
}

// add counts an arrival for alias a at t.
func (m *meter) add(a int32, t time.Duration) {
	ring := m.roll(a, t)
	ring[int(int64(t/time.Minute)%int64(m.window))]++
	m.sums[a]++
}

// rate is alias a's mean arrivals per minute over the window ending at t.
func (m *meter) rate(a int32, t time.Duration) float64 {
	m.roll(a, t)
	return float64(m.sums[a]) / float64(m.window)
}

// roll moves alias a's ring on to the minute of t, clearing the minutes
// it passes, and returns it.
func (m *meter) roll(a int32, t time.Duration) []int32 {
	for int(a) >= len(m.counts) {
		m.counts = append(m.counts, make([]int32, m.window))
		m.sums = append(m.sums, 0)
		m.minute = append(m.minute, 0)
	}
	ring, now := m.counts[a], int64(t/time.Minute)
	for k := m.minute[a] + 1; k <= now && k <= m.minute[a]+int64(m.window); k++ {
		slot := int(k % int64(m.window))
		m.sums[a] -= ring[slot]
		ring[slot] = 0
	}
	if now > m.minute[a] {
		m.minute[a] = now
	}
	return ring
}
