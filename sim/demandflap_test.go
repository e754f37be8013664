package sim

import (
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// demand-flap: demand alternating between high and low every ten minutes
// for a day moves nothing the steady demand of the same mean does not:
// at most one residency change an hour, and no extra loads.
func TestDemandFlap(t *testing.T) {
	p := sparkLab()
	const low, high = 2.0, 18.0
	aliases := []string{"chat", "draw", "embed", "music", "speak", "transcribe"}
	flap := Scenario{Name: "demand-flap"}
	steadyMean := Scenario{Name: "steady"}
	for _, a := range aliases {
		d := Demand{Alias: a, RatePerMinute: low}
		for at := 10 * time.Minute; at < 24*time.Hour; at += 20 * time.Minute {
			d.Bursts = append(d.Bursts, Burst{At: at, Duration: 10 * time.Minute, Factor: high / low})
		}
		flap.Demand = append(flap.Demand, d)
		steadyMean.Demand = append(steadyMean.Demand, Demand{Alias: a, RatePerMinute: (low + high) / 2})
	}
	for _, mode := range []Mode{ModeOff, ModeAuto} {
		f := run(t, p, flap, mode)
		s := run(t, p, steadyMean, mode)
		logMetrics(t, "demand-flap", mode, f)
		logMetrics(t, "steady", mode, s)
		if f.Metrics.ResidencyChangesPerHour > 1 {
			t.Errorf("%s: %.2f residency changes an hour under flapping demand", mode, f.Metrics.ResidencyChangesPerHour)
		}
		if f.Metrics.GBReloaded > s.Metrics.GBReloaded {
			t.Errorf("%s: flapping demand reloads %s, steady %s", mode, pools.GB(f.Metrics.GBReloaded), pools.GB(s.Metrics.GBReloaded))
		}
		if f.Metrics.Applies != 0 {
			t.Errorf("%s: flapping demand made %d applies", mode, f.Metrics.Applies)
		}
	}
}
