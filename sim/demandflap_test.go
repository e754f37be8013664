package sim

import (
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// flapping is a day of demand on chat, embed, video (steady) and music,
// whose demand is low and high by turns, ten minutes each. Music and
// video cannot share spark-node-01, where both may be placed.
func flapping() Scenario {
	music := Demand{Alias: "music", RatePerMinute: 0.5, ServiceSeconds: 15}
	for at := 10 * time.Minute; at < 24*time.Hour; at += 20 * time.Minute {
		music.Bursts = append(music.Bursts, Burst{At: at, Duration: 10 * time.Minute, Factor: 8})
	}
	return Scenario{Name: "demand-flap", Demand: []Demand{
		{Alias: "chat", RatePerMinute: 4}, {Alias: "embed", RatePerMinute: 10},
		{Alias: "video", RatePerMinute: 2, ServiceSeconds: 20}, music,
	}}
}

// eager is a controller that chases demand: residency plans as quick as
// any, and no band between the promote and demote rates.
func eager(sc Scenario) Scenario {
	sc.Controller.ResidencyStableTicks, sc.Controller.CooldownSeconds = 1, 1
	sc.Controller.PromotePerMinute, sc.Controller.DemotePerMinute = 2, 2
	return sc
}

// loaded is every GB a run loaded after the start.
func loaded(m Metrics) float64 { return m.GBReloaded + m.GBLoadedByPlans }

// demand-flap: under demand that flaps the controller changes residency
// at most once an hour and loads nothing the gateway alone would not
// (auto loads no more than off); an eager controller chases the flapping
// and loads more.
func TestDemandFlap(t *testing.T) {
	p := sparkLab()
	sc := flapping()
	off, auto, chase := run(t, p, sc, ModeOff), run(t, p, sc, ModeAuto), run(t, p, eager(sc), ModeAuto)
	logMetrics(t, "demand-flap", ModeOff, off)
	logMetrics(t, "demand-flap", ModeAuto, auto)
	logMetrics(t, "eager", ModeAuto, chase)
	if r := auto.Metrics.ResidencyChangesPerHour; r > 1 {
		t.Errorf("%.2f residency changes an hour under flapping demand", r)
	}
	if loaded(auto.Metrics) > loaded(off.Metrics) {
		t.Errorf("auto loads %s, off %s: the controller added loads", pools.GB(loaded(auto.Metrics)), pools.GB(loaded(off.Metrics)))
	}
	if r := chase.Metrics.ResidencyChangesPerHour; r <= 1 || loaded(chase.Metrics) <= loaded(auto.Metrics) {
		t.Errorf("an eager controller changes residency %.2f times an hour and loads %s (auto: %s); it should chase the flapping",
			r, pools.GB(loaded(chase.Metrics)), pools.GB(loaded(auto.Metrics)))
	}
}

// Busy demand holds an on-demand lane warm: music, steady above the
// promote rate, becomes preferred once and stays so.
func TestBusyDemandHoldsALaneWarm(t *testing.T) {
	p := sparkLab()
	sc := Scenario{Name: "busy", Duration: 6 * time.Hour, Demand: []Demand{{Alias: "music", RatePerMinute: 3}}}
	r := run(t, p, sc, ModeAuto)
	var changes []string
	for _, a := range actions(r, "step") {
		if a.Detail == "residency:music@spark-node-01" || a.Detail == "start:music@spark-node-01" {
			changes = append(changes, a.At.String())
		}
	}
	lanes := r.Final.Instances("music")
	if len(changes) != 1 || len(lanes) != 1 || lanes[0].Residency != pools.Preferred || !lanes[0].Loaded {
		t.Errorf("music changed residency at %v and ends as %+v; want once, preferred and loaded", changes, lanes)
		logTimeline(t, r)
	}
}

// Quiet demand lets a lane held warm go again.
func TestQuietDemandLetsALaneGo(t *testing.T) {
	p := sparkLab()
	music := Demand{Alias: "music", RatePerMinute: 0.1, Bursts: []Burst{{At: 0, Duration: 2 * time.Hour, Factor: 40}}}
	sc := Scenario{Name: "fade", Duration: 6 * time.Hour, Demand: []Demand{music}}
	r := run(t, p, sc, ModeAuto)
	var steps []string
	for _, a := range actions(r, "step") {
		if a.Detail == "residency:music@spark-node-01" || a.Detail == "start:music@spark-node-01" {
			steps = append(steps, a.At.String())
		}
	}
	if lanes := r.Final.Instances("music"); len(steps) != 2 || len(lanes) != 1 || lanes[0].Residency != pools.OnDemand {
		t.Errorf("music changed residency at %v and ends as %+v; want held warm, then let go", steps, lanes)
		logTimeline(t, r)
	}
}

// Under the pair-taken profile, which makes image on-demand for want of
// room, busy draw demand does not hold image warm.
func TestDemandLeavesAProfilesResidencyAlone(t *testing.T) {
	p := sparkLab()
	sc := Scenario{Name: "taken", Duration: 4 * time.Hour,
		Demand: []Demand{{Alias: "draw", RatePerMinute: 6, ServiceSeconds: 5}},
		Events: []Event{{At: time.Minute, Kind: SwitchProfile, Profile: "pair-taken"}}}
	r := run(t, p, sc, ModeAuto)
	for _, a := range actions(r, "apply") {
		if strings.Contains(a.Detail, "demand holds image warm") {
			t.Errorf("at %v: %s", a.At, a.Detail)
		}
	}
	for _, l := range r.Final.Instances("image") {
		if l.Residency != pools.OnDemand {
			t.Errorf("image runs %s on %s; the profile has it on-demand", l.Residency, l.Node)
		}
	}
}
