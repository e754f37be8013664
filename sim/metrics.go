package sim

import (
	"cmp"
	"math"
	"slices"
	"time"

	"poolc.dev/poolc/pools"
)

// stats accumulates the metrics of a run and its timeline.
type stats struct {
	Metrics
	coldWaits        []float64 // seconds
	residencyChanges int
	timeline         []Action
}

// note adds an entry to the timeline.
func (s *stats) note(at time.Duration, kind, detail string) {
	s.timeline = append(s.timeline, Action{At: at, Kind: kind, Detail: detail})
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

// result is what the run measured, with the timeline in time order.
func (s *stats) result(length time.Duration, events int, final pools.Fleet) *Result {
	slices.SortStableFunc(s.timeline, func(a, b Action) int { return cmp.Compare(a.At, b.At) })
	return &Result{Metrics: s.metrics(length), Timeline: s.timeline, Events: events, Final: final}
}
