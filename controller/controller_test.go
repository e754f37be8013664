package controller

import (
	"slices"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

var settings = Settings{
	StableTicks: 3, ResidencyStableTicks: 20, MinGainGB: 1, Cooldown: 10 * time.Minute,
	LoadBudgetGBPerHour: 25, Backoff: time.Minute, MaxBackoff: 4 * time.Minute,
}

// pool: lane "l" (model of 10 GB on disk, 20 in memory) prefers n1 over
// n2; alias "a" routes to it. Profile "away" cordons n1.
func pool() *pools.Pool {
	return &pools.Pool{
		Name:   "p",
		Nodes:  []pools.Node{{Name: "n1", MemoryGB: 128}, {Name: "n2", MemoryGB: 128}},
		Models: []pools.Model{{Name: "m", SizeGB: 10, MemoryGB: 20}},
		Lanes: []pools.Lane{{Name: "l", Model: "m", Residency: pools.KeepWarm, Placement: []string{"n1", "n2"}, Port: 8000},
			{Name: "z", Model: "m", Residency: pools.KeepWarm, Placement: []string{"n1", "n2"}, Port: 8001}},
		Aliases:       []pools.Alias{{Name: "a", Lane: "l"}},
		Profiles:      []pools.Profile{{Name: "away", Cordon: []string{"n1"}}, {Name: "home"}},
		ActiveProfile: "home",
	}
}

func laneOn(name, node string) pools.LaneState {
	return pools.LaneState{Name: name, Node: node, Model: "m", Port: 8000, Residency: pools.KeepWarm, MemoryGB: 20, Loaded: true}
}

func fleet(down string, lanes []pools.LaneState, routes ...pools.Route) pools.Fleet {
	f := pools.Fleet{Nodes: []pools.NodeState{{Name: "n1", Down: down == "n1"}, {Name: "n2", Down: down == "n2"}}, Lanes: lanes, Routes: routes}
	f.Normalize()
	return f
}

// move is lane l going from n2 back to n1, make-before-break.
func move(lane string) *pools.Plan {
	from, to := laneOn(lane, "n2"), laneOn(lane, "n1")
	return &pools.Plan{
		Profile: "home",
		Steps: []pools.Step{
			{ID: "start:" + lane + "@n1", Kind: pools.StepStart, Node: "n1", Lane: &to},
			{ID: "route:a", Kind: pools.StepRoute, Node: "n1", Route: &pools.Route{Alias: "a", Lane: lane, Node: "n1"}},
			{ID: "drain:" + lane + "@n2", Kind: pools.StepDrain, Node: "n2", Lane: &from},
			{ID: "stop:" + lane + "@n2", Kind: pools.StepStop, Node: "n2", Lane: &from},
		},
		Before: fleet("", []pools.LaneState{from}, pools.Route{Alias: "a", Lane: lane, Node: "n2"}),
		After:  fleet("", []pools.LaneState{to}, pools.Route{Alias: "a", Lane: lane, Node: "n1"}),
	}
}

// failover is lane l starting on n2 because n1 is down.
func failover() *pools.Plan {
	to := laneOn("l", "n2")
	return &pools.Plan{
		Profile: "home",
		Steps: []pools.Step{
			{ID: "start:l@n2", Kind: pools.StepStart, Node: "n2", Lane: &to},
			{ID: "route:a", Kind: pools.StepRoute, Node: "n2", Route: &pools.Route{Alias: "a", Lane: "l", Node: "n2"}},
		},
		Before: fleet("n1", nil, pools.Route{Alias: "a", Lane: "l", Node: "n1"}),
		After:  fleet("n1", []pools.LaneState{to}, pools.Route{Alias: "a", Lane: "l", Node: "n2"}),
	}
}

func residency() *pools.Plan {
	l := laneOn("l", "n1")
	l.Residency = pools.Preferred
	before := laneOn("l", "n1")
	return &pools.Plan{
		Profile: "home",
		Steps:   []pools.Step{{ID: "residency:l@n1", Kind: pools.StepResidency, Node: "n1", Lane: &l, From: pools.KeepWarm}},
		Before:  fleet("", []pools.LaneState{before}),
		After:   fleet("", []pools.LaneState{l}),
	}
}

// ticker runs ticks 30 s apart from a memory.
type ticker struct {
	t   *testing.T
	now time.Duration
	mem Memory
}

func (k *ticker) tick(p *pools.Plan, inProgress *pools.Plan, advise bool) Decision {
	k.now += 30 * time.Second
	d, mem := Decide(Input{Now: k.now, Plan: p, Pool: pool(), Advise: advise, InProgress: inProgress}, k.mem, settings)
	k.mem = mem
	return d
}

func (k *ticker) expect(p *pools.Plan, v Verdict, c Code) {
	k.t.Helper()
	if d := k.tick(p, nil, false); d.Verdict != v || d.Code != c {
		k.t.Fatalf("at %s: %s (%s: %s); want %s (%s)", k.now, d.Verdict, d.Code, d.Reason, v, c)
	}
}

func TestAnEmptyPlanWaits(t *testing.T) {
	k := &ticker{t: t}
	k.expect(&pools.Plan{}, Wait, NoChanges)
}

func TestUrgentPlansActAtOnce(t *testing.T) {
	k := &ticker{t: t}
	k.expect(failover(), Apply, Urgent)

	from, to := laneOn("l", "n1"), laneOn("l", "n2")
	vacate := &pools.Plan{Profile: "away"} // it cordons n1
	vacate.Steps = []pools.Step{
		{ID: "start:l@n2", Kind: pools.StepStart, Node: "n2", Lane: &to},
		{ID: "drain:l@n1", Kind: pools.StepDrain, Node: "n1", Lane: &from},
		{ID: "stop:l@n1", Kind: pools.StepStop, Node: "n1", Lane: &from},
	}
	a := Analyze(vacate, pool())
	if !a.Urgent || a.Why != "the plan vacates cordoned node n1" {
		t.Fatalf("vacating a cordoned node: %+v", a)
	}
}

func TestOtherPlansWaitUntilStable(t *testing.T) {
	k := &ticker{t: t}
	k.expect(move("l"), Wait, Unstable)
	k.expect(move("z"), Wait, Unstable) // another plan starts over
	k.expect(move("z"), Wait, Unstable)
	k.expect(move("z"), Apply, Ready)
	if a := k.tick(move("z"), nil, false).Analysis; a.GainGB != 40 || a.LoadGB != 10 {
		t.Errorf("gain %v, load %v; want 40 (a better place, a stopped process) and 10", a.GainGB, a.LoadGB)
	}
}

func TestResidencyPlansWaitLonger(t *testing.T) {
	k := &ticker{t: t}
	for range settings.ResidencyStableTicks - 1 {
		k.expect(residency(), Wait, Unstable)
	}
	k.expect(residency(), Apply, Ready)
	// A residency step among others makes the plan wait as long.
	mixed := move("l")
	mixed.Steps = append(mixed.Steps, residency().Steps...)
	k = &ticker{t: t}
	for range settings.ResidencyStableTicks - 1 {
		k.expect(mixed, Wait, Unstable)
	}
	k.expect(mixed, Apply, Ready)
}

func TestTooSmallAGainWaits(t *testing.T) {
	k := &ticker{t: t}
	p := move("l")
	p.Steps = p.Steps[1:2] // a route flip alone gains nothing
	p.Before.Lanes = append(p.Before.Lanes, laneOn("l", "n1"))
	p.Before.Normalize()
	k.expect(p, Wait, Unstable)
	k.expect(p, Wait, Unstable)
	k.expect(p, Wait, SmallGain)
}

func TestCooldownAndLoadBudget(t *testing.T) {
	k := &ticker{t: t}
	k.expect(failover(), Apply, Urgent) // loads 10 GB
	k.expect(move("l"), Wait, Unstable)
	k.expect(move("l"), Wait, Unstable)
	k.expect(move("l"), Wait, Cooldown)
	for k.now < 10*time.Minute {
		k.tick(move("l"), nil, false)
	}
	k.expect(move("l"), Apply, Ready) // 20 of 25 GB used this hour
	k.expect(move("z"), Wait, Unstable)
	k.expect(move("z"), Wait, Unstable)
	for k.now < 21*time.Minute {
		k.tick(move("z"), nil, false)
	}
	k.expect(move("z"), Wait, OverBudget)
	for k.now+30*time.Second < time.Hour+30*time.Second {
		k.expect(move("z"), Wait, OverBudget)
	}
	k.expect(move("z"), Apply, Ready) // the first load is an hour old
}

func TestFailuresBackOffDoubling(t *testing.T) {
	k := &ticker{t: t}
	k.expect(failover(), Apply, Urgent)
	failed := []string{"start:l@n2"}
	for i, wait := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 4 * time.Minute} {
		k.mem = k.mem.Failed(failed, k.now, settings)
		until := k.now + wait
		for k.now+30*time.Second < until {
			k.expect(failover(), Wait, BackingOff)
		}
		k.expect(failover(), Apply, Urgent)
		if i == 0 {
			// An urgent plan that retries no failed step does not wait.
			k.mem = k.mem.Failed(failed, k.now, settings)
			other := failover()
			other.Steps = other.Steps[1:]
			if d := k.tick(other, nil, false); d.Verdict != Apply {
				t.Fatalf("another urgent plan during a backoff: %s (%s)", d.Verdict, d.Reason)
			}
			k.mem.NextBackoff = 2 * time.Minute
		}
	}
	k.mem = k.mem.Succeeded()
	k.mem = k.mem.Failed(failed, k.now, settings)
	if k.mem.BackoffUntil != k.now+time.Minute {
		t.Errorf("after a success the backoff starts over: until %s, now %s", k.mem.BackoffUntil, k.now)
	}
}

func TestAChangeInProgressHoldsAllButAnUrgentReroute(t *testing.T) {
	k := &ticker{t: t}
	inProgress := move("l")
	if d := k.tick(move("z"), inProgress, false); d.Verdict != Wait || d.Code != InProgress {
		t.Fatalf("a plan during a change: %s (%s)", d.Verdict, d.Reason)
	}
	if d := k.tick(failover(), inProgress, false); d.Verdict != Apply || d.Code != Preempt {
		t.Fatalf("an urgent plan with other routes during a change: %s (%s)", d.Verdict, d.Reason)
	}
	same := failover()
	if d := k.tick(same, failover(), false); d.Verdict != Wait {
		t.Fatalf("an urgent plan with the same routes as the change: %s (%s)", d.Verdict, d.Reason)
	}
}

func TestAdviseAdvisesEachPlanOnce(t *testing.T) {
	k := &ticker{t: t}
	if d := k.tick(failover(), nil, true); d.Verdict != Advise {
		t.Fatalf("advise: %s", d.Verdict)
	}
	if d := k.tick(failover(), nil, true); d.Verdict != Wait || d.Code != Advised {
		t.Fatalf("the same plan again: %s (%s)", d.Verdict, d.Code)
	}
}

func TestWarmHoldsBusyOnDemandLanesWithABand(t *testing.T) {
	pool := &pools.Pool{
		Lanes: []pools.Lane{
			{Name: "busy", Residency: pools.OnDemand},
			{Name: "chosen", Residency: pools.OnDemand},
			{Name: "fading", Residency: pools.OnDemand},
			{Name: "gone", Residency: pools.OnDemand},
			{Name: "middling", Residency: pools.OnDemand},
			{Name: "pinned", Residency: pools.KeepWarm},
		},
		ActiveProfile: "night",
		Profiles:      []pools.Profile{{Name: "night", Lanes: []pools.LaneOverride{{Lane: "chosen", Residency: pools.OnDemand}}}},
	}
	rates := map[string]float64{"busy": 2, "chosen": 9, "fading": 1, "gone": 0.4, "middling": 1, "pinned": 50}
	held := map[string]bool{"fading": true, "gone": true}
	s := Settings{PromotePerMinute: 2, DemotePerMinute: 0.5}
	got := Warm(pool, rates, held, s)
	// busy reaches the promote rate; chosen is on demand by the profile's
	// choice; fading is held and above the demote rate; gone fell below
	// it; middling is in the band but not held; pinned is not on demand.
	if want := []string{"busy", "fading"}; !slices.Equal(got, want) {
		t.Errorf("Warm = %v, want %v", got, want)
	}
}

// A plan that loads more than the whole hourly budget is not held for
// ever: it goes in an hour with no other load.
func TestAPlanLargerThanTheBudgetGoesAlone(t *testing.T) {
	small := settings
	small.LoadBudgetGBPerHour = 5 // move("l") loads 10 GB
	decide := func(now time.Duration, m Memory) (Decision, Memory) {
		return Decide(Input{Now: now, Plan: move("l"), Pool: pool()}, m, small)
	}
	var d Decision
	m := Memory{Loads: []Load{{At: 0, GB: 1}}}
	for tick := time.Duration(1); tick <= 4; tick++ {
		d, m = decide(tick*30*time.Second, m)
	}
	if d.Code != OverBudget {
		t.Fatalf("beside another load this hour: %s (%s); want %s", d.Code, d.Reason, OverBudget)
	}
	if d, _ = decide(time.Hour+time.Minute, m); d.Verdict != Apply {
		t.Errorf("in an hour of its own: %s (%s); want it applied", d.Code, d.Reason)
	}
}
