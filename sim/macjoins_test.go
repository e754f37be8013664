package sim

import (
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// macJoins: the Mac Studio is down at the start and comes up after an
// hour; cognition prefers it.
func macJoins(p *pools.Pool) Scenario {
	return Scenario{
		Name:   "mac-joins",
		Demand: rate(steady(p, 12), 1, "music", "video"),
		Events: []Event{
			{At: 0, Kind: Crash, Node: "mac-studio"},
			{At: time.Hour, Kind: Recover, Node: "mac-studio"},
		},
	}
}

func macJoinsPool() *pools.Pool {
	return withPlacement(sparkLab(), "cognition", "mac-studio", "spark-node-03")
}

// The controller prefetches cognition's weights to the Mac first, then
// starts it there, flips chat to it and only then retires the old
// process: no request fails.
func TestMacJoins(t *testing.T) {
	p := macJoinsPool()
	sc := macJoins(p)
	r := run(t, p, sc, ModeAuto)
	logMetrics(t, sc.Name, ModeAuto, r)
	if r.Metrics.Failed != 0 || r.Metrics.Interruptions != 0 || r.Metrics.Applies != 1 {
		logTimeline(t, r)
		t.Fatalf("%d failed, %d cut off, %d applies; want none, none and one", r.Metrics.Failed, r.Metrics.Interruptions, r.Metrics.Applies)
	}
	done := map[string]time.Duration{}
	for _, a := range actions(r, "step") {
		done[a.Detail] = a.At
	}
	order := []string{"prefetch:qwen3-27b@mac-studio", "start:cognition@mac-studio", "route:chat", "drain:cognition@spark-node-03", "stop:cognition@spark-node-03"}
	for i, id := range order {
		at, ok := done[id]
		if !ok {
			t.Fatalf("step %s was not carried out; done: %v", id, done)
		}
		t.Logf("%-32s done at %s", id, at)
		if i > 0 && at < done[order[i-1]] {
			t.Errorf("%s done at %s, before %s", id, at, order[i-1])
		}
	}
	apply := actions(r, "apply")[0].At
	if took := done[order[0]] - apply; took < 17*time.Second {
		t.Errorf("17 GB prefetched in %s over a 1 GB/s link", took)
	}
	if got := r.Final.Instances("cognition"); len(got) != 1 || got[0].Node != "mac-studio" {
		t.Errorf("cognition runs on %v", got)
	}
	if rt := r.Final.Route("chat"); rt == nil || rt.Node != "mac-studio" {
		t.Errorf("chat routes to %v", rt)
	}
}

// With the Mac's disk full the prefetch fails: nothing moves, and the
// controller retries less and less often.
func TestDiskFullBacksOff(t *testing.T) {
	p := macJoinsPool()
	sc := macJoins(p)
	sc.Events = append(sc.Events, Event{At: 0, Kind: DiskFull, Node: "mac-studio"})
	r := run(t, p, sc, ModeAuto)
	logMetrics(t, "disk-full", ModeAuto, r)
	applies := actions(r, "apply")
	if len(applies) < 4 || len(actions(r, "backoff")) != len(applies) {
		logTimeline(t, r)
		t.Fatalf("%d applies, %d backoffs", len(applies), len(actions(r, "backoff")))
	}
	for i := 2; i < len(applies); i++ {
		prev, gap := applies[i-1].At-applies[i-2].At, applies[i].At-applies[i-1].At
		if gap < prev && gap < maxBackoff {
			t.Errorf("retry %d came %s after the last, the one before %s", i, gap, prev)
		}
	}
	if got := r.Final.Instances("cognition"); len(got) != 1 || got[0].Node != "spark-node-03" || r.Metrics.Failed != 0 {
		t.Errorf("cognition runs on %v; %d failed", got, r.Metrics.Failed)
	}
}

// A configuration change that makes cognition prefer the Mac moves it
// there in auto, and changes nothing in off.
func TestChangeConfig(t *testing.T) {
	p := sparkLab()
	sc := Scenario{
		Name:     "config",
		Duration: 3 * time.Hour,
		Demand:   rate(steady(p, 12), 1, "music", "video"),
		Events:   []Event{{At: time.Hour, Kind: ChangeConfig, Config: "mac-first.hcl"}},
	}
	load := func(path string) (*pools.Pool, error) {
		return withPlacement(p, "cognition", "mac-studio", "spark-node-03"), nil
	}
	for _, mode := range []Mode{ModeOff, ModeAuto} {
		r, err := Run(p, sc, Options{Mode: mode, LoadConfig: load})
		if err != nil {
			t.Fatal(err)
		}
		want := map[Mode]string{ModeOff: "spark-node-03", ModeAuto: "mac-studio"}[mode]
		if got := r.Final.Instances("cognition"); len(got) != 1 || got[0].Node != want || r.Metrics.Failed != 0 {
			t.Errorf("%s: cognition runs on %v, want %s; %d failed", mode, got, want, r.Metrics.Failed)
		}
	}
	if _, err := Run(p, sc, Options{Mode: ModeAuto}); err == nil {
		t.Error("a config change without a loader was accepted")
	}
}
