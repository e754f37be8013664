package sim

import (
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// flapping is a day of steady demand on every alias but two: music,
// whose demand is low and high by turns, ten minutes each, and video,
// which has none (it cannot share a node with music). steadyMean has
// music at the same mean rate all day.
func flapping(p *pools.Pool) (flap, steadyMean Scenario) {
	const low, high = 0.5, 4.0
	flap = Scenario{Name: "demand-flap", Demand: rate(rate(steady(p, 2), low, "music"), 0, "video")}
	steadyMean = Scenario{Name: "steady", Demand: rate(rate(steady(p, 2), (low+high)/2, "music"), 0, "video")}
	for i := range flap.Demand {
		if flap.Demand[i].Alias != "music" {
			continue
		}
		for at := 10 * time.Minute; at < 24*time.Hour; at += 20 * time.Minute {
			flap.Demand[i].Bursts = append(flap.Demand[i].Bursts, Burst{At: at, Duration: 10 * time.Minute, Factor: high / low})
		}
	}
	return flap, steadyMean
}

// loaded is every GB a run loaded after the start.
func loaded(m Metrics) float64 { return m.GBReloaded + m.GBLoadedByPlans }

// demand-flap: demand that flaps moves nothing the steady demand of the
// same mean does not: at most one residency change an hour, no extra
// loads, no extra applies.
func TestDemandFlap(t *testing.T) {
	p := sparkLab()
	flap, steadyMean := flapping(p)
	for _, mode := range []Mode{ModeOff, ModeAuto} {
		f := run(t, p, flap, mode)
		s := run(t, p, steadyMean, mode)
		logMetrics(t, "demand-flap", mode, f)
		logMetrics(t, "steady", mode, s)
		if f.Metrics.ResidencyChangesPerHour > 1 {
			t.Errorf("%s: %.2f residency changes an hour under flapping demand", mode, f.Metrics.ResidencyChangesPerHour)
		}
		if loaded(f.Metrics) > loaded(s.Metrics) {
			t.Errorf("%s: flapping demand loads %s, steady %s", mode, pools.GB(loaded(f.Metrics)), pools.GB(loaded(s.Metrics)))
		}
		if f.Metrics.Applies > s.Metrics.Applies {
			t.Errorf("%s: flapping demand made %d applies, steady %d", mode, f.Metrics.Applies, s.Metrics.Applies)
		}
	}
}

// Busy demand holds an on-demand lane warm: steady demand above the
// promote rate makes music preferred once and keeps it so.
func TestBusyDemandHoldsALaneWarm(t *testing.T) {
	p := sparkLab()
	_, busy := flapping(p)
	r := run(t, p, busy, ModeAuto)
	var changes []string
	for _, a := range actions(r, "step") {
		if a.Detail == "residency:music@spark-node-01" {
			changes = append(changes, a.At.String())
		}
	}
	lanes := r.Final.Instances("music")
	if len(changes) != 1 || len(lanes) != 1 || lanes[0].Residency != pools.Preferred || !lanes[0].Loaded {
		t.Errorf("music changed residency at %v and ends as %+v; want once, preferred and loaded", changes, lanes)
		logTimeline(t, r)
	}
}

// The hysteresis is what holds flapping demand: without the band between
// the promote and demote rates and with residency plans as quick as any,
// the controller chases it.
func TestDemandFlapWithoutHysteresisChurns(t *testing.T) {
	p := sparkLab()
	flap, _ := flapping(p)
	flap.Controller.ResidencyStableTicks = 1
	flap.Controller.CooldownSeconds = 1
	flap.Controller.PromotePerMinute, flap.Controller.DemotePerMinute = 2, 2
	r := run(t, p, flap, ModeAuto)
	logMetrics(t, "no hysteresis", ModeAuto, r)
	if r.Metrics.ResidencyChangesPerHour <= 1 {
		t.Errorf("%.2f residency changes an hour without hysteresis; the flapping demand should make more", r.Metrics.ResidencyChangesPerHour)
	}
}
