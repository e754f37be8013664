package plan

import (
	"testing"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/pools"
)

func podPool(members ...pools.Member) *pools.Pool {
	return &pools.Pool{Name: "jobs", PodPools: []pools.PodPool{{Name: "harness", Image: "harness:1", Namespace: "harness", Members: members}}}
}

// TestMemberLeavingTheConfigIsRemoved: a member the state holds but the
// config no longer lists is one member-remove step carrying the member as
// the state had it; the member that stays changes nothing.
func TestMemberLeavingTheConfigIsRemoved(t *testing.T) {
	a := pools.Member{Context: "member-a", Capacity: 2, Registry: pools.Registry{Name: "k3d-reg", Port: 5051}}
	b := pools.Member{Context: "member-b", Capacity: 3}
	before := place.Place(place.Input{Pool: podPool(a, b)}).Desired
	pool := podPool(a)
	placed := place.Place(place.Input{Pool: pool})

	left := Leaving(placed.Desired, before)
	if len(left) != 1 || left[0].Key() != "harness/member-b" {
		t.Fatalf("Leaving = %+v, want harness/member-b alone", left)
	}
	p, err := Diff(Input{Pool: pool, Placement: placed, Current: before})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 1 {
		t.Fatalf("plan has %d steps, want 1: %+v", len(p.Steps), p.Steps)
	}
	s := p.Steps[0]
	if s.Kind != pools.StepMemberRemove || s.Target != "harness/member-b" || s.Member == nil || *s.Member != before.Members[1] {
		t.Errorf("step = %s %s %+v, want member-remove harness/member-b as the state had it", s.Kind, s.Target, s.Member)
	}
	if got := len(p.After.Members); got != 1 || p.After.Members[0].Context != "member-a" {
		t.Errorf("after the plan: members %+v, want member-a alone", p.After.Members)
	}

	// Once it is gone the plan is empty.
	p, err = Diff(Input{Pool: pool, Placement: placed, Current: p.After})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 0 {
		t.Errorf("plan after the removal: %+v, want none", p.Steps)
	}
}

// TestLeavingIsEmptyWhenTheConfigHoldsEveryMember: a member whose
// settings changed is not leaving, and an empty state has none.
func TestLeavingIsEmptyWhenTheConfigHoldsEveryMember(t *testing.T) {
	before := place.Place(place.Input{Pool: podPool(pools.Member{Context: "member-a", Capacity: 2})}).Desired
	after := place.Place(place.Input{Pool: podPool(pools.Member{Context: "member-a", Capacity: 5})}).Desired
	if left := Leaving(after, before); len(left) != 0 {
		t.Errorf("Leaving = %+v, want none", left)
	}
	if left := Leaving(after, pools.Fleet{}); len(left) != 0 {
		t.Errorf("Leaving from an empty state = %+v, want none", left)
	}
}
