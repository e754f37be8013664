package plan

import (
	"slices"
	"strings"
	"testing"

	"poolc.dev/poolc/pools"
)

// TestAResidencyChangeAcrossOnDemandIsMakeBeforeBreak plans lane chat's
// residency changes from a fleet that runs it as it was: across
// on-demand (its own process ↔ its node's router) the lane starts as it
// will be, the alias is routed to it, and only then is the lane as it was
// drained and stopped; between keep-warm and preferred the process stays
// and one residency step changes it in place. The route names the
// process it reaches: the router's model of an on-demand lane, else the
// lane's own. Applying the plan reaches a fleet that plans nothing more.
func TestAResidencyChangeAcrossOnDemandIsMakeBeforeBreak(t *testing.T) {
	mbb := map[string][]string{
		"route:ask":    {"start:chat@a"},
		"drain:chat@a": {"route:ask", "start:chat@a"},
		"stop:chat@a":  {"drain:chat@a"},
		"start:chat@a": nil,
	}
	for _, tc := range []struct {
		from, to pools.Residency
		steps    []string
	}{
		{pools.KeepWarm, pools.OnDemand, []string{"start:chat@a", "route:ask", "drain:chat@a", "stop:chat@a"}},
		{pools.Preferred, pools.OnDemand, []string{"start:chat@a", "route:ask", "drain:chat@a", "stop:chat@a"}},
		{pools.OnDemand, pools.KeepWarm, []string{"start:chat@a", "route:ask", "drain:chat@a", "stop:chat@a"}},
		{pools.OnDemand, pools.Preferred, []string{"start:chat@a", "route:ask", "drain:chat@a", "stop:chat@a"}},
		{pools.KeepWarm, pools.Preferred, []string{"residency:chat@a"}},
		{pools.Preferred, pools.KeepWarm, []string{"residency:chat@a"}},
	} {
		t.Run(string(tc.from)+"→"+string(tc.to), func(t *testing.T) {
			pool := upgradePool(128, pools.Model{})
			pool.Lanes[0].Residency = tc.from
			cur := applied(t, pools.Fleet{}, diff(t, pool, pools.Fleet{}))
			pool.Lanes[0].Residency = tc.to
			p := diff(t, pool, cur)
			if got := ids(p); !slices.Equal(got, tc.steps) {
				t.Fatalf("steps %v; want %v\n%s", got, tc.steps, dump(p))
			}
			for _, s := range p.Steps {
				if want, ok := mbb[s.ID]; ok && len(tc.steps) > 1 && !sameSet(s.DependsOn, want) {
					t.Errorf("%s depends on %v; want %v", s.ID, s.DependsOn, want)
				}
				switch s.Kind {
				case pools.StepStart:
					if s.Lane.Residency != tc.to || s.From != tc.from {
						t.Errorf("start runs chat %s from %q; want %s from %s", s.Lane.Residency, s.From, tc.to, tc.from)
					}
					if !strings.Contains(s.Reason, "router") {
						t.Errorf("start reason %q does not say the router takes part", s.Reason)
					}
				case pools.StepDrain, pools.StepStop:
					if s.Lane.Residency != tc.from {
						t.Errorf("%s is about chat %s; want the lane as it was, %s", s.ID, s.Lane.Residency, tc.from)
					}
				case pools.StepRoute:
					if s.Route.Router != (tc.to == pools.OnDemand) {
						t.Errorf("the route reaches chat through the router: %v; want %v", s.Route.Router, tc.to == pools.OnDemand)
					}
				case pools.StepResidency:
					if s.Lane.Residency != tc.to || s.From != tc.from {
						t.Errorf("residency step %s → %s; want %s → %s", s.From, s.Lane.Residency, tc.from, tc.to)
					}
				}
				if s.ChangesResidency() != (s.Kind == pools.StepStart || s.Kind == pools.StepResidency) {
					t.Errorf("%s: ChangesResidency is %v", s.ID, s.ChangesResidency())
				}
			}
			if len(p.Interruptions) != 0 {
				t.Errorf("interruptions %+v; want none", p.Interruptions)
			}
			after := applied(t, cur, p)
			if l := after.Instances("chat"); len(l) != 1 || l[0].Residency != tc.to {
				t.Fatalf("after the plan chat runs as %+v; want one process, %s", l, tc.to)
			}
			if r := after.Route("ask"); r == nil || after.Serves(*r) == nil || r.Router != (tc.to == pools.OnDemand) {
				t.Errorf("after the plan ask routes %+v; want chat as it is now, %s", r, tc.to)
			}
			if again := diff(t, pool, after); len(again.Steps) != 0 {
				t.Errorf("planning after the plan: %v; want nothing", ids(again))
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestAnApplyCutOffAcrossOnDemandStopsTheOldProcess: an apply cut off
// after it started lane chat in the router but before it stopped chat's
// own process (on the same node and port) leaves both; the next plan
// drains and stops the own process and keeps the router's.
func TestAnApplyCutOffAcrossOnDemandStopsTheOldProcess(t *testing.T) {
	pool := upgradePool(128, pools.Model{})
	pool.Lanes[0].Residency = pools.Preferred
	cur := applied(t, pools.Fleet{}, diff(t, pool, pools.Fleet{}))
	own := cur.Instances("chat")
	if len(own) != 1 {
		t.Fatalf("chat runs as %+v", own)
	}
	routed := own[0]
	routed.Residency, routed.Loaded, routed.Aliases = pools.OnDemand, false, []string{"ask"}
	cur.Lanes = append(slices.Clone(cur.Lanes), routed)
	pool.Lanes[0].Residency = pools.OnDemand
	p := diff(t, pool, cur)
	var stopped []pools.Residency
	for _, s := range p.Steps {
		if s.Kind == pools.StepStop {
			stopped = append(stopped, s.Lane.Residency)
		}
		if s.Kind == pools.StepStart {
			t.Errorf("starts %s again, which the router serves", s.ID)
		}
	}
	if !slices.Equal(stopped, []pools.Residency{pools.Preferred}) {
		t.Fatalf("stops chat as %v; want its own process (preferred) stopped\n%s", stopped, dump(p))
	}
	after := applied(t, cur, p)
	if l := after.Instances("chat"); len(l) != 1 || l[0].Residency != pools.OnDemand {
		t.Errorf("after the plan chat runs as %+v; want the router's alone", l)
	}
}
