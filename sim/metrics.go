package sim

import (
	"math"
	"slices"
	"time"
)

// stats accumulates the metrics of a run.
type stats struct {
	Metrics
	coldWaits        []float64 // seconds
	residencyChanges int
}

// coldWait records a request that waited d for its lane to load.
func (s *stats) coldWait(d time.Duration) {
	s.coldWaits = append(s.coldWaits, d.Seconds())
}

// metrics finishes the metrics of a run of the given length.
func (s *stats) metrics(length time.Duration) Metrics {
	m := s.Metrics
	if m.Requests > 0 {
		m.SLOPercent = 100 * float64(m.ServedWithinSLO) / float64(m.Requests)
	}
	m.ColdWaits = len(s.coldWaits)
	if n := len(s.coldWaits); n > 0 {
		waits := slices.Clone(s.coldWaits)
		slices.Sort(waits)
		m.ColdWaitP95Seconds = waits[int(math.Ceil(0.95*float64(n)))-1]
	}
	if h := length.Hours(); h > 0 {
		m.ResidencyChangesPerHour = float64(s.residencyChanges) / h
	}
	return m
}
