package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// source makes the arrivals of one alias: a Poisson process whose rate is
// the demand's peak rate times the day shape times the bursts in force.
// Each source draws from its own random stream, seeded by the scenario's
// seed, the alias's name and how many demands of that alias come before
// it, so runs in different modes see the same requests at the same
// times, with the same service times.
type source struct {
	alias   int32
	perSec  float64
	daily   bool
	service float64 // mean seconds
	rng     *rand.Rand
	// Bursts as segments: from breaks[i] to breaks[i+1] the rate is
	// multiplied by factors[i] (before breaks[0], by 1).
	breaks  []time.Duration
	factors []float64
	seg     int // the segment of the last arrival
}

func newSource(d Demand, alias int32, seed uint64, nth int) source {
	h := fnv.New64a()
	h.Write([]byte(d.Alias))
	s := source{
		alias: alias, perSec: d.RatePerMinute / 60, daily: d.Shape == "daily", service: d.ServiceSeconds,
		rng: rand.New(rand.NewPCG(seed, h.Sum64()+uint64(nth))),
	}
	for _, b := range d.Bursts {
		s.breaks = append(s.breaks, b.At, b.At+b.Duration)
	}
	slices.Sort(s.breaks)
	s.breaks = slices.Compact(s.breaks)
	for _, from := range s.breaks {
		f := 1.0
		for _, b := range d.Bursts {
			if b.At <= from && from < b.At+b.Duration {
				f *= b.Factor
			}
		}
		s.factors = append(s.factors, f)
	}
	s.seg = -1
	return s
}

// next returns the first arrival after t and before end, if any, and its
// work: its service time as a multiple of the mean (exponential, mean 1).
// Within a segment of constant burst factor it draws
// exponential gaps at the segment's peak rate and keeps a candidate with
// probability shape(t) (thinning); a gap that crosses the segment's end
// starts over from there, which the exponential's lack of memory allows.
func (s *source) next(t, end time.Duration) (time.Duration, float64, bool) {
	for t < end {
		for s.seg+1 < len(s.breaks) && s.breaks[s.seg+1] <= t {
			s.seg++
		}
		factor, until := 1.0, end
		if s.seg >= 0 {
			factor = s.factors[s.seg]
		}
		if s.seg+1 < len(s.breaks) {
			until = min(until, s.breaks[s.seg+1])
		}
		rate := s.perSec * factor
		if rate <= 0 {
			t = until
			continue
		}
		gap := s.rng.ExpFloat64() / rate
		if gap >= (until - t).Seconds() {
			t = until
			continue
		}
		t += secs(gap)
		if s.daily && s.rng.Float64() >= dayShape(t) {
			continue
		}
		return t, s.rng.ExpFloat64(), true
	}
	return 0, 0, false
}

// dayShape is the daily demand curve, as a fraction of the peak: 0.2 at
// night, rising smoothly from 06:00 to 1.0 at 09:00, level through the
// working day, falling smoothly from 17:00 to 0.2 at 21:00. Time 0 of a
// simulation is midnight.
func dayShape(t time.Duration) float64 {
	h := math.Mod(t.Hours(), 24)
	const night, day = 0.2, 1.0
	switch {
	case h < 6 || h >= 21:
		return night
	case h < 9:
		return night + (day-night)*smoothstep((h-6)/3)
	case h < 17:
		return day
	}
	return day - (day-night)*smoothstep((h-17)/4)
}

// smoothstep eases from 0 to 1 as x goes from 0 to 1.
func smoothstep(x float64) float64 { return x * x * (3 - 2*x) }
