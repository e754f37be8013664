package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// onePool is one 128 GB node (a 115.2 GB budget) holding a keep-warm lane
// of 40 GB and a preferred one of 30 GB, with on-demand lanes beside.
func onePool(onDemand map[string]float64) *pools.Pool {
	p := &pools.Pool{
		Name:  "one",
		Guard: pools.Guard{Ceiling: 0.9, ReserveGB: 8},
		Nodes: []pools.Node{{Name: "n", MemoryGB: 128, Guard: pools.Guard{Ceiling: 0.9, ReserveGB: 8}}},
	}
	add := func(name string, gb float64, r pools.Residency) {
		p.Models = append(p.Models, pools.Model{Name: name, SizeGB: gb / 2, MemoryGB: gb})
		p.Lanes = append(p.Lanes, pools.Lane{Name: name, Model: name, Residency: r, Placement: []string{"n"}, Port: 8000 + len(p.Lanes)})
		p.Aliases = append(p.Aliases, pools.Alias{Name: name, Lane: name, Fallbacks: []string{pools.Cloud}})
	}
	add("base", 40, pools.KeepWarm)
	add("pref", 30, pools.Preferred)
	for _, name := range []string{"od-a", "od-b", "od-c", "od-d", "od-e"} {
		if gb, ok := onDemand[name]; ok {
			add(name, gb, pools.OnDemand)
		}
	}
	// The IR keeps named elements sorted by name.
	slices.SortFunc(p.Models, func(a, b pools.Model) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(p.Lanes, func(a, b pools.Lane) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(p.Aliases, func(a, b pools.Alias) int { return strings.Compare(a.Name, b.Name) })
	return p
}

// lane is the load of lane process name on node n.
func lane(w *world, name string) *residing { return w.adm.proc(w.fleet.instIdx[instKey{name, "n"}]) }

// Admission evicts idle on-demand lanes before preferred ones, least
// recently used first, never keep-warm or busy ones, and makes a load
// wait when only busy lanes could make room.
func TestAdmissionEvictsInOrder(t *testing.T) {
	p := onePool(map[string]float64{"od-a": 30, "od-b": 30, "od-c": 50, "od-d": 45})
	w := newWorld(p, Scenario{}.withDefaults(), Options{Mode: ModeOff})
	load := func(name string) {
		w.adm.admit(w.fleet.instIdx[instKey{name, "n"}])
		if err := w.run(); err != nil {
			t.Fatal(err)
		}
	}
	loaded := func() (out []string) {
		for _, i := range w.fleet.nodes[0].insts {
			if w.adm.proc(i).loaded {
				out = append(out, w.fleet.insts[i].spec.Name)
			}
		}
		return out
	}
	load("od-a") // 40 + 30 + 30 = 100
	w.now += time.Minute
	load("od-b") // evicts od-a, the on-demand lane
	if got := loaded(); !equal(got, "base", "od-b", "pref") {
		t.Fatalf("after od-b: %v", got)
	}
	w.now += time.Minute
	load("od-a") // od-b was used last: evicts it, not pref
	if got := loaded(); !equal(got, "base", "od-a", "pref") {
		t.Fatalf("after od-a again: %v", got)
	}
	w.now += time.Minute
	load("od-c") // 50: evicts od-a, then pref
	if got := loaded(); !equal(got, "base", "od-c") {
		t.Fatalf("after od-c: %v", got)
	}
	w.gw.line(w.fleet.instIdx[instKey{"od-c", "n"}]).serving = 0 // busy
	w.adm.admit(w.fleet.instIdx[instKey{"od-d", "n"}])
	if d := lane(w, "od-d"); !d.pending || d.loading {
		t.Fatalf("od-d beside a busy od-c: pending %v, loading %v", d.pending, d.loading)
	}
	w.gw.line(w.fleet.instIdx[instKey{"od-c", "n"}]).serving = -1
	w.fleet.becameIdle(w.fleet.instIdx[instKey{"od-c", "n"}])
	if err := w.run(); err != nil {
		t.Fatal(err)
	}
	// od-d (45) takes od-c's place (50), and pref (30) comes back in the
	// room left: 40 + 45 + 30 = 115 of 115.2.
	if got := loaded(); !equal(got, "base", "od-d", "pref") {
		t.Fatalf("after od-c went idle: %v", got)
	}
	if w.stats.GuardAborts != 0 {
		t.Errorf("%d guard aborts", w.stats.GuardAborts)
	}
}

func equal(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// A lane that cannot fit beside the keep-warm lanes is aborted by the
// guard and stays latched — no load is tried again — until an operator
// starts it, when the guard aborts it again.
func TestGuardAbortLatchesUntilStartedByHand(t *testing.T) {
	p := onePool(map[string]float64{"od-e": 80}) // 40 + 80 > 115.2: the placer leaves it out
	sc := Scenario{
		Duration: 4 * time.Hour,
		Demand:   []Demand{{Alias: "od-e", RatePerMinute: 2}, {Alias: "base", RatePerMinute: 2}},
		Events:   []Event{{At: 2 * time.Hour, Kind: StartLane, Lane: "od-e"}},
	}.withDefaults()
	w := newWorld(p, sc, Options{Mode: ModeOff})
	// An operator started the lane by hand, outside poolc.
	i := w.fleet.register(pools.LaneState{Name: "od-e", Node: "n", Model: "od-e", Residency: pools.OnDemand, MemoryGB: 80, Port: 9000})
	w.routing.setRoute(pools.Route{Alias: "od-e", Lane: "od-e", Node: "n"})
	if err := w.run(); err != nil {
		t.Fatal(err)
	}
	r := w.result()
	m := r.Metrics
	logMetrics(t, "guard", ModeOff, r)
	if m.GuardAborts != 2 || len(actions(r, "guard-abort")) != 2 {
		t.Fatalf("%d guard aborts; want one at the first request and one after the manual start", m.GuardAborts)
	}
	if aborts := actions(r, "guard-abort"); aborts[1].At != 2*time.Hour {
		t.Errorf("second abort at %s; want at the manual start", aborts[1].At)
	}
	if !w.guard.latched(i) || m.GBReloaded != 0 {
		t.Errorf("latched %v, reloaded %s", w.guard.latched(i), pools.GB(m.GBReloaded))
	}
	if m.ToCloud == 0 || m.Failed != 0 || m.Served+m.ToCloud != m.Requests {
		t.Errorf("requests of the latched lane should go to the cloud: %+v", m)
	}
}
