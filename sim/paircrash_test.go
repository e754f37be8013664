package sim

import (
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// pairCrash: spark-node-01 and spark-node-02 crash at 2h and come back
// at 6h, under steady demand on every alias (the two on-demand lanes,
// which cannot share spark-node-01, at a lower rate).
func pairCrash(p *pools.Pool) Scenario {
	return Scenario{
		Name:   "pair-crash",
		Demand: rate(steady(p, 12), 1, "music", "video"),
		Events: []Event{
			{At: 2 * time.Hour, Kind: Crash, Node: "spark-node-01"},
			{At: 2 * time.Hour, Kind: Crash, Node: "spark-node-02"},
			{At: 6 * time.Hour, Kind: Recover, Node: "spark-node-01"},
			{At: 6 * time.Hour, Kind: Recover, Node: "spark-node-02"},
		},
	}
}

// The image lane may also go to the Mac, so the controller has somewhere
// to put every keep-warm and preferred lane while the pair is down.
func pairCrashPool() *pools.Pool {
	return withPlacement(sparkLab(), "image", "spark-node-02", "spark-node-03", "mac-studio")
}

func TestPairCrash(t *testing.T) {
	p := pairCrashPool()
	sc := pairCrash(p)
	off := run(t, p, sc, ModeOff)
	auto := run(t, p, sc, ModeAuto)
	logMetrics(t, sc.Name, ModeOff, off)
	logMetrics(t, sc.Name, ModeAuto, auto)
	o, a := off.Metrics, auto.Metrics
	if a.SLOPercent <= o.SLOPercent {
		t.Errorf("SLO: auto %.2f%% is not above off %.2f%%", a.SLOPercent, o.SLOPercent)
	}
	if a.ToCloud >= o.ToCloud && a.ToCloud > 0 {
		t.Errorf("to cloud: auto %d, off %d", a.ToCloud, o.ToCloud)
	}
	if a.ColdWaits >= o.ColdWaits {
		t.Errorf("cold waits: auto %d, off %d", a.ColdWaits, o.ColdWaits)
	}
	// Off restores the pair's lanes when it returns; auto moved them away
	// and back by plan, so nothing is reloaded that no plan asked for.
	if a.GBReloaded >= o.GBReloaded || a.GBLoadedByPlans == 0 {
		t.Errorf("GB reloaded: auto %v (and %v by its plans), off %v", a.GBReloaded, a.GBLoadedByPlans, o.GBReloaded)
	}
	if a.Applies == 0 || o.Applies != 0 {
		t.Errorf("applies: auto %d, off %d", a.Applies, o.Applies)
	}
	// After the recovery every lane whose first candidate is on the pair
	// runs there, once, and its aliases route to it.
	for _, l := range p.Lanes {
		first := p.Candidates(l)[0]
		if first != "spark-node-01" && first != "spark-node-02" {
			continue
		}
		inst := auto.Final.Instances(l.Name)
		if len(inst) != 1 || inst[0].Node != first {
			t.Errorf("lane %s runs on %v, want %s only", l.Name, inst, first)
		}
		for _, r := range auto.Final.Routes {
			if r.Lane == l.Name && r.Node != first {
				t.Errorf("alias %s routes to %s@%s, want %s", r.Alias, r.Lane, r.Node, first)
			}
		}
	}
	if t.Failed() {
		logTimeline(t, auto)
	}
}
