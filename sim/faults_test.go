package sim

import (
	"testing"
	"time"
)

// A long hang of the node serving chat: requests wait WaitLimitSeconds,
// then go to the cloud; auto moves chat to the Mac once the lease lapses
// and back once the node answers again.
func TestHang(t *testing.T) {
	p := sparkLab()
	sc := Scenario{
		Name:     "hang",
		Duration: 4 * time.Hour,
		Demand:   rate(steady(p, 12), 1, "music", "video"),
		Events:   []Event{{At: time.Hour, Kind: Hang, Node: "spark-node-03", Duration: time.Hour}},
	}
	off := run(t, p, sc, ModeOff)
	auto := run(t, p, sc, ModeAuto)
	logMetrics(t, sc.Name, ModeOff, off)
	logMetrics(t, sc.Name, ModeAuto, auto)
	if off.Metrics.ToCloud == 0 || auto.Metrics.ToCloud >= off.Metrics.ToCloud || auto.Metrics.SLOPercent <= off.Metrics.SLOPercent {
		t.Errorf("to cloud: off %d, auto %d; SLO off %.2f%%, auto %.2f%%", off.Metrics.ToCloud, auto.Metrics.ToCloud, off.Metrics.SLOPercent, auto.Metrics.SLOPercent)
	}
	if rt := auto.Final.Route("chat"); rt == nil || rt.Node != "spark-node-03" {
		t.Errorf("after the hang chat routes to %v", rt)
	}
}

// After a crash and recovery, the node restores its keep-warm lanes and,
// with room, its preferred ones — with no controller at all.
func TestRecoveryRestoresResidentLanes(t *testing.T) {
	p := sparkLab()
	sc := Scenario{
		Name:     "restore",
		Duration: 2 * time.Hour,
		Events: []Event{
			{At: 30 * time.Minute, Kind: Crash, Node: "spark-node-02"},
			{At: time.Hour, Kind: Recover, Node: "spark-node-02"},
		},
	}
	r := run(t, p, sc, ModeOff)
	loaded := map[string]bool{}
	for _, l := range r.Final.Lanes {
		if l.Node == "spark-node-02" {
			loaded[l.Name] = l.Loaded
		}
	}
	if !loaded["tts-2"] || !loaded["tts-3"] || !loaded["image"] {
		t.Errorf("on spark-node-02 after recovery: %v", loaded)
	}
	if want := 4.0 + 4 + 24; r.Metrics.GBReloaded != want {
		t.Errorf("reloaded %v GB, want %v (tts twice and image)", r.Metrics.GBReloaded, want)
	}
}

// A change in progress — a slow prefetch to the Mac — is preempted by an
// urgent plan with other routes: a crash elsewhere.
func TestUrgentPlanPreemptsAChangeInProgress(t *testing.T) {
	p := macJoinsPool()
	sc := macJoins(p)
	sc.Links.PerNode = map[string]float64{"mac-studio": 0.005} // 17 GB in about an hour
	sc.StepTimeout = 2 * time.Hour                             // apply --step-timeout 2h
	crash := time.Hour + 10*time.Minute
	sc.Events = append(sc.Events, Event{At: crash, Kind: Crash, Node: "spark-node-01"})
	r := run(t, p, sc, ModeAuto)
	logMetrics(t, "preempt", ModeAuto, r)
	preempts := actions(r, "preempt")
	if len(preempts) != 1 {
		logTimeline(t, r)
		t.Fatalf("%d preemptions", len(preempts))
	}
	sc = sc.withDefaults()
	if d := preempts[0].At - crash; d > secs(sc.Lease.TTLSeconds+sc.Controller.TickSeconds) {
		t.Errorf("preempted %s after the crash", d)
	}
	if rt := r.Final.Route("embed"); rt == nil || rt.Node != "spark-node-03" {
		t.Errorf("embed routes to %v after spark-node-01 crashed", rt)
	}
}
