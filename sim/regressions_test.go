package sim

import (
	"testing"
	"time"

	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/schedule"
)

// A load goes on while its node hangs or is cut off: when the fault ends
// the lane is loaded and serves.
func TestALoadSurvivesAHangOrPartition(t *testing.T) {
	for _, kind := range []EventKind{Partition, Hang} {
		p := onePool(map[string]float64{"od-a": 30})
		sc := Scenario{
			Duration: time.Hour,
			Demand:   []Demand{{Alias: "od-a", RatePerMinute: 2}},
			Events:   []Event{{At: 5 * time.Second, Kind: kind, Node: "n", Duration: time.Minute}},
		}.withDefaults()
		w := newWorld(p, sc, Options{Mode: ModeOff})
		w.adm.admit(w.fleet.instIdx[instKey{"od-a", "n"}]) // loads from 0 s for about 12 s
		if err := w.run(); err != nil {
			t.Fatal(err)
		}
		in, m := lane(w, "od-a"), w.result().Metrics
		if !in.loaded || in.loading || m.Served < m.Requests/2 {
			t.Errorf("%s during a load: loaded %v, loading %v; served %d of %d", kind, in.loaded, in.loading, m.Served, m.Requests)
		}
	}
}

// A plan step waiting for a load that waits for room fails when the
// node crashes, so the change it belongs to ends.
func TestAStepWaitingForRoomFailsWhenTheNodeCrashes(t *testing.T) {
	p := onePool(map[string]float64{"od-a": 30, "od-c": 50})
	w := newWorld(p, Scenario{Duration: time.Hour}.withDefaults(), Options{Mode: ModeAuto})
	// od-a is busy: base 40 + pref 30 + od-a 30 = 100 of 115.2 GB, and only
	// pref (30) can be evicted, too little for od-c (50): it must wait.
	a := w.fleet.instIdx[instKey{"od-a", "n"}]
	w.adm.resident(a)
	w.gw.reqs = append(w.gw.reqs, request{state: reqServing, inst: a})
	w.gw.line(a).serving = int32(len(w.gw.reqs) - 1)
	// A plan makes od-c preferred: the step waits for its load.
	c := w.fleet.instIdx[instKey{"od-c", "n"}]
	spec := w.fleet.insts[c].spec
	spec.Residency = pools.Preferred
	x, err := w.exec.execute(&pools.Plan{Steps: []pools.Step{{ID: "residency:od-c@n", Kind: pools.StepResidency, Node: "n", Lane: &spec, DependsOn: []string{}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !w.adm.proc(c).pending {
		t.Fatal("od-c does not wait for room")
	}
	w.faults.crash(0)
	if err := w.run(); err != nil {
		t.Fatal(err)
	}
	if got := x.m.Result(0).Outcome; got != schedule.Failed || !x.done {
		t.Errorf("the step is %s and its change done %v; want failed and done", got, x.done)
	}
}

// On a crash, a hang or a partition, the request in service is cut off;
// those only queued go on to the alias's fallback, the cloud here.
func TestQueuedRequestsGoToTheFallbackOnAFault(t *testing.T) {
	for _, kind := range []EventKind{Crash, Hang, Partition} {
		sc := Scenario{
			Duration: 20 * time.Minute,
			// Overloaded: a queue builds.
			Demand: []Demand{{Alias: "base", RatePerMinute: 6, ServiceSeconds: 60}},
			Events: []Event{{At: 10 * time.Minute, Kind: kind, Node: "n"}},
		}
		m := run(t, onePool(nil), sc, ModeOff).Metrics
		if m.Interruptions != 1 || m.Failed != 1 {
			t.Errorf("%s: %d interruptions, %d failed; want the one request in service", kind, m.Interruptions, m.Failed)
		}
	}
}

// A request that waits at two loading lanes in turn is one cold wait, of
// both waits together.
func TestAColdWaitIsCountedOnce(t *testing.T) {
	p := onePool(map[string]float64{"od-a": 20, "od-b": 20})
	w := newWorld(p, Scenario{Duration: time.Hour, Demand: []Demand{{Alias: "od-a"}}}.withDefaults(), Options{Mode: ModeOff})
	r := w.gw.newRequest(0, 0, 1) // its mean work: 2 s
	w.stats.Requests++
	w.gw.dispatch(r) // od-a loads for 10 s
	w.now = 5 * time.Second
	w.routing.setRoute(pools.Route{Alias: "od-a", Lane: "od-b", Node: "n"})
	w.gw.requeue(w.fleet.instIdx[instKey{"od-a", "n"}], true) // as a drain does: to od-b, which loads too
	if err := w.run(); err != nil {
		t.Fatal(err)
	}
	m := w.result().Metrics
	if m.Served != 1 || m.ColdWaits != 1 || m.ColdWaitP95Seconds < 10 {
		t.Errorf("served %d, cold waits %d (p95 %vs); want one wait of at least 10 s", m.Served, m.ColdWaits, m.ColdWaitP95Seconds)
	}
}

// The guard's latch belongs to the process: once it is gone, a start of
// the lane on that node is not refused for it.
func TestTheLatchGoesWithTheProcess(t *testing.T) {
	p := onePool(map[string]float64{"od-e": 80})
	w := newWorld(p, Scenario{Duration: time.Hour}.withDefaults(), Options{Mode: ModeAuto})
	i := w.fleet.register(pools.LaneState{Name: "od-e", Node: "n", Model: "od-e", Residency: pools.OnDemand, MemoryGB: 80, Port: 9000})
	w.adm.admit(i) // 80 GB beside base's 40 passes the 115.2 GB budget: latched
	if !w.guard.latched(i) {
		t.Fatal("the guard did not latch od-e")
	}
	w.fleet.stop(i)
	st := pools.Step{Kind: pools.StepStart, Node: "n", Lane: &pools.LaneState{Name: "od-e", Node: "n"}}
	if why, _ := w.exec.act.refuses(st); why != "" {
		t.Errorf("a start after the latched process stopped is refused: %s", why)
	}
}

// A configuration change that shrinks a node's guard shrinks what
// admission lets it load.
func TestAConfigChangeSetsTheNodesBudget(t *testing.T) {
	p, q := onePool(nil), onePool(nil)
	q.Guard = pools.Guard{Ceiling: 0.5, ReserveGB: 8}
	q.Nodes[0].Guard = q.Guard
	sc := Scenario{Duration: time.Hour, Events: []Event{{At: time.Minute, Kind: ChangeConfig, Config: "tight"}}}
	w := newWorld(p, sc.withDefaults(), Options{Mode: ModeOff, LoadConfig: func(string) (*pools.Pool, error) { return q, nil }})
	if err := w.run(); err != nil {
		t.Fatal(err)
	}
	if got, want := w.adm.rooms[0].budget, q.Nodes[0].Budget(); got != want {
		t.Errorf("budget after the change %v GB, want %v GB", got, want)
	}
}

// Two busy on-demand lanes that cannot share their node take turns, as a
// swapping gateway serves them: neither starves while the other stays
// busy.
func TestBusyLanesThatCannotShareANodeTakeTurns(t *testing.T) {
	p := onePool(map[string]float64{"od-a": 50, "od-c": 50})
	for i := range p.Aliases {
		p.Aliases[i].Fallbacks = nil // no cloud: requests wait their turn
	}
	sc := Scenario{Duration: 2 * time.Hour, Demand: []Demand{
		{Alias: "od-a", RatePerMinute: 2, ServiceSeconds: 10},
		{Alias: "od-c", RatePerMinute: 2, ServiceSeconds: 10},
	}}
	m := run(t, p, sc, ModeOff).Metrics
	logMetrics(t, "take turns", ModeOff, &Result{Metrics: m})
	if m.Evictions < 4 || m.Failed > m.Requests/20 {
		t.Errorf("%d evictions, %d of %d requests failed; want the two lanes to swap and serve nearly all", m.Evictions, m.Failed, m.Requests)
	}
}

// The gateway gives up on a request that waits past its timeout.
func TestARequestWaitsNoLongerThanTheTimeout(t *testing.T) {
	sc := Scenario{Duration: time.Hour, Demand: []Demand{{Alias: "base", RatePerMinute: 6, ServiceSeconds: 60}}}
	sc.Gateway.RequestTimeoutSeconds = 120
	m := run(t, onePool(nil), sc, ModeOff).Metrics
	// One request a minute is served; the queue behind it times out.
	if m.Served > 70 || m.ToCloud < m.Requests/2 {
		t.Errorf("served %d, to the cloud %d of %d", m.Served, m.ToCloud, m.Requests)
	}
}

// A model's service time applies to every request it serves, whatever
// the alias's demand says.
func TestAModelsServiceTimeRulesItsRequests(t *testing.T) {
	sc := Scenario{Duration: time.Hour, Demand: []Demand{{Alias: "base", RatePerMinute: 1, ServiceSeconds: 2}}}
	quick := run(t, onePool(nil), sc, ModeOff).Metrics
	sc.ModelServiceSeconds = map[string]float64{"base": 240}
	slow := run(t, onePool(nil), sc, ModeOff).Metrics
	if quick.Served < quick.Requests*9/10 || slow.Served > quick.Served/2 {
		t.Errorf("served %d of %d at 2 s a request, %d at 240 s", quick.Served, quick.Requests, slow.Served)
	}
}

// A preferred lane evicted for a larger load comes back when a smaller
// one takes that load's place and leaves room.
func TestAPreferredLaneComesBackWhenRoomIsLeft(t *testing.T) {
	p := onePool(map[string]float64{"od-a": 30, "od-c": 50})
	w := newWorld(p, Scenario{Duration: time.Hour}.withDefaults(), Options{Mode: ModeOff})
	load := func(name string) {
		w.adm.admit(w.fleet.instIdx[instKey{name, "n"}])
		if err := w.run(); err != nil {
			t.Fatal(err)
		}
	}
	load("od-c") // base 40 + pref 30 + od-c 50 passes 115.2: pref goes
	if lane(w, "pref").loaded {
		t.Fatal("pref was not evicted for od-c")
	}
	load("od-a") // od-c goes for od-a, leaving 45 GB: room for pref's 30
	if !lane(w, "pref").loaded && !lane(w, "pref").loading {
		t.Errorf("pref stays out with %.1f GB free", w.adm.rooms[0].budget-w.adm.rooms[0].used)
	}
}
