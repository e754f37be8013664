package scenario

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/sim"
	"poolc.dev/poolc/sim/scenarios"
)

// The reference scenarios, as shipped, on the example pool: each asserts
// the relation operators of such fleets have seen, not a number.

func reference(t *testing.T, name string) (*compiler.Config, *File) {
	t.Helper()
	cfg := sparkLab(t)
	file, src, ok := scenarios.Lookup(name)
	if !ok {
		t.Fatalf("no reference scenario %s", name)
	}
	f, diags := Read(file, src)
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	f.Base = cfg.Dir()
	return cfg, f
}

func simulate(t *testing.T, cfg *compiler.Config, f *File, mode sim.Mode) *sim.Result {
	t.Helper()
	res, err := sim.Run(cfg.Pool, f.Scenario, sim.Options{Mode: mode, LoadConfig: func(p string) (*pools.Pool, error) {
		c, diags := compiler.Load([]string{f.ConfigPath(p)})
		return c.Pool, diags.Err()
	}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func actions(r *sim.Result, kind string) []sim.Action {
	var out []sim.Action
	for _, a := range r.Timeline {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

func TestPairCrash(t *testing.T) {
	cfg, f := reference(t, "pair-crash")
	off, auto := simulate(t, cfg, f, sim.ModeOff), simulate(t, cfg, f, sim.ModeAuto)
	o, a := off.Metrics, auto.Metrics
	if a.SLOPercent <= o.SLOPercent {
		t.Errorf("SLO: auto %.2f%%, off %.2f%%; auto should be higher", a.SLOPercent, o.SLOPercent)
	}
	if a.ToCloud != 0 || a.ColdWaits >= o.ColdWaits {
		t.Errorf("auto sent %d to the cloud (want 0) with %d cold waits (off: %d)", a.ToCloud, a.ColdWaits, o.ColdWaits)
	}
	// Off restores the pair's lanes when it returns; auto moved them away
	// and back by plan, so nothing is reloaded that no plan asked for,
	// and its plans load each of the pair's lanes at most twice: off the
	// pair and back.
	pairLanes := []string{"embeddings", "stt", "tts-1", "tts-2", "tts-3", "image"}
	pairGB := 0.0
	for _, name := range pairLanes {
		for _, l := range cfg.Pool.Lanes {
			if l.Name == name {
				pairGB += cfg.Pool.Model(l.Model).SizeGB
			}
		}
	}
	if a.GBReloaded >= o.GBReloaded || a.GBLoadedByPlans == 0 || a.GBLoadedByPlans > 2*pairGB {
		t.Errorf("GB reloaded: auto %v (and %v by its plans; the pair's lanes weigh %v), off %v", a.GBReloaded, a.GBLoadedByPlans, pairGB, o.GBReloaded)
	}
	// After recovery the pair's lanes are back on the pair.
	for _, name := range pairLanes {
		var nodes []string
		for _, l := range auto.Final.Instances(name) {
			nodes = append(nodes, l.Node)
		}
		if len(nodes) != 1 || !strings.HasPrefix(nodes[0], "spark-node-0") || nodes[0] == "spark-node-03" {
			t.Errorf("lane %s ends on %v, want back on the pair", name, nodes)
		}
	}
}

func TestLeaseLoss(t *testing.T) {
	cfg, f := reference(t, "lease-loss")
	auto := simulate(t, cfg, f, sim.ModeAuto)
	applies := actions(auto, "apply")
	if len(applies) == 0 {
		t.Fatal("no apply after the crash")
	}
	crash, ttl, tick := time.Hour, 90*time.Second, 30*time.Second
	if first := applies[0].At; first < crash+ttl-10*time.Second || first > crash+ttl+tick {
		t.Errorf("first apply at %v; want about one lease TTL (%v) plus at most a tick after the crash at %v", first, ttl, crash)
	}
	for _, a := range applies {
		if a.At >= 3*time.Hour && a.At <= 3*time.Hour+5*time.Minute {
			t.Errorf("an apply at %v, during the 60 s partition shorter than the lease: %s", a.At, a.Detail)
		}
	}
}

func TestMacJoins(t *testing.T) {
	cfg, f := reference(t, "mac-joins")
	auto := simulate(t, cfg, f, sim.ModeAuto)
	if auto.Metrics.Failed != 0 {
		t.Errorf("%d requests failed", auto.Metrics.Failed)
	}
	var prefetched, started time.Duration
	for _, a := range actions(auto, "step") {
		switch a.Detail {
		case "prefetch:qwen3-27b@mac-studio":
			prefetched = a.At
		case "start:cognition@mac-studio":
			started = a.At
		}
	}
	if prefetched == 0 || started == 0 || prefetched > started {
		t.Errorf("weights prefetched at %v, cognition started on the Mac at %v: want the weights first", prefetched, started)
	}
	if lanes := auto.Final.Instances("cognition"); len(lanes) != 1 || lanes[0].Node != "mac-studio" {
		t.Errorf("cognition ends on %+v, want the Mac", lanes)
	}
}

func TestPairTaken(t *testing.T) {
	cfg, f := reference(t, "pair-taken")
	auto := simulate(t, cfg, f, sim.ModeAuto)
	applies := actions(auto, "apply")
	if len(applies) != 2 || applies[0].At < 2*time.Hour || applies[0].At > 3*time.Hour || applies[1].At < 8*time.Hour {
		t.Fatalf("applies: %+v; want one after the cordon at 2h and one after the uncordon at 8h", applies)
	}
}

func TestDemandFlap(t *testing.T) {
	cfg, f := reference(t, "demand-flap")
	off, auto := simulate(t, cfg, f, sim.ModeOff), simulate(t, cfg, f, sim.ModeAuto)
	if r := auto.Metrics.ResidencyChangesPerHour; r > 1 {
		t.Errorf("%.2f residency changes per hour under flapping demand; want at most one", r)
	}
	if a, o := loaded(auto.Metrics), loaded(off.Metrics); a > o {
		t.Errorf("auto loaded %v GB, off %v GB: the controller added loads", a, o)
	}
	// The relation is the controller's doing: without the band between
	// its promote and demote rates, and with residency plans as quick as
	// any, it chases the flapping and loads more.
	eager := *f
	eager.Scenario.Controller.ResidencyStableTicks = 1
	eager.Scenario.Controller.CooldownSeconds = 1
	eager.Scenario.Controller.DemotePerMinute = f.Scenario.Controller.PromotePerMinute
	chase := simulate(t, cfg, &eager, sim.ModeAuto)
	if r := chase.Metrics.ResidencyChangesPerHour; r <= 1 || loaded(chase.Metrics) <= loaded(auto.Metrics) {
		t.Errorf("without hysteresis: %.2f residency changes per hour, %v GB loaded (auto: %v GB); it should chase the flapping", r, loaded(chase.Metrics), loaded(auto.Metrics))
	}
	for _, r := range []struct {
		name string
		m    sim.Metrics
	}{{"off", off.Metrics}, {"auto", auto.Metrics}, {"eager", chase.Metrics}} {
		t.Logf("%-5s SLO %.2f%%, residency changes/h %.2f, loaded %v GB, applies %d", r.name, r.m.SLOPercent, r.m.ResidencyChangesPerHour, loaded(r.m), r.m.Applies)
	}
}

// loaded is every GB a run loaded after the start.
func loaded(m sim.Metrics) float64 { return m.GBReloaded + m.GBLoadedByPlans }

func TestSameSeedSameRun(t *testing.T) {
	cfg, f := reference(t, "pair-crash")
	a, _ := json.Marshal(simulate(t, cfg, f, sim.ModeAuto))
	b, _ := json.Marshal(simulate(t, cfg, f, sim.ModeAuto))
	if string(a) != string(b) {
		t.Fatal("the same seed gave two different runs")
	}
}
