package pools

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// ApplyAll gives the fleet Apply gives one step at a time, for random
// fleets and random sequences of every step kind (including steps that
// fail: both stop there, with the same error).
func TestApplyAllIsApplyOneAtATime(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		lane := func() *LaneState {
			res := []Residency{KeepWarm, Preferred, OnDemand}[r.IntN(3)]
			return &LaneState{Name: fmt.Sprintf("l%d", r.IntN(6)), Node: fmt.Sprintf("n%d", r.IntN(4)), Port: 8000 + r.IntN(3), Residency: res, Model: "m"}
		}
		step := func(i int) Step {
			id := fmt.Sprintf("s%d", i)
			switch r.IntN(7) {
			case 0:
				return Step{ID: id, Kind: StepPrefetch, Prefetch: &Prefetch{Node: fmt.Sprintf("n%d", r.IntN(4)), Model: fmt.Sprintf("m%d", r.IntN(3)), Path: "/p", SHA256: fmt.Sprint(r.IntN(2))}}
			case 1, 2:
				return Step{ID: id, Kind: StepStart, Lane: lane()}
			case 3:
				return Step{ID: id, Kind: StepStop, Lane: lane()}
			case 4:
				// To a lane on one of the nodes, to the cloud, or away:
				// an alias that moves leaves its old node's routes.
				alias := Route{Alias: fmt.Sprintf("a%d", r.IntN(5))}
				switch r.IntN(4) {
				case 0:
					alias.Lane = Cloud
				case 1, 2:
					alias.Lane, alias.Node = fmt.Sprintf("l%d", r.IntN(6)), fmt.Sprintf("n%d", r.IntN(4))
				}
				return Step{ID: id, Kind: StepRoute, Route: &alias}
			case 5:
				kind := []StepKind{StepMemberEnsure, StepImageSync, StepMemberRemove}[r.IntN(3)]
				return Step{ID: id, Kind: kind, Member: &MemberState{PodPool: "p", Context: fmt.Sprintf("c%d", r.IntN(3)), Image: fmt.Sprint(r.IntN(2))}}
			default:
				if r.IntN(4) == 0 {
					return Step{ID: id, Kind: StepDrain, Lane: lane()}
				}
				return Step{ID: id, Kind: StepResidency, Lane: lane()}
			}
		}
		var base Fleet
		base.Normalize()
		for i := range r.IntN(12) {
			s := step(i)
			if s.Kind == StepStart || s.Kind == StepPrefetch || s.Kind == StepRoute || s.Kind == StepMemberEnsure {
				base.Apply(s)
			}
		}
		steps := make([]Step, r.IntN(40))
		for i := range steps {
			steps[i] = step(100 + i)
		}
		one, all := base.Clone(), base.Clone()
		split, taken := SplitByNode(base.Clone()), []Fleet(nil)
		var oneErr error
		for _, s := range steps {
			if oneErr = one.Apply(s); oneErr != nil {
				break
			}
			// The split gives the same fleet after every step, and
			// what it gave before is not changed by the steps after.
			if err := split.Apply(s); err != nil {
				t.Fatalf("seed %d: %s: ByNode: %v", seed, s.ID, err)
			}
			want := one.Clone()
			if got := split.Fleet(); !reflect.DeepEqual(want, got) {
				t.Fatalf("seed %d: after %s\nApply:  %+v\nByNode: %+v", seed, s.ID, want, got)
			}
			// A node's view holds the routes to it, and only those.
			for _, node := range []string{"", "n0", "n1", "n2", "n3"} {
				var to []Route
				for _, r := range want.Routes {
					if r.Node == node {
						to = append(to, r)
					}
				}
				if got := split.Node(node).Routes; len(got) != len(to) || len(to) > 0 && !reflect.DeepEqual(got, to) {
					t.Fatalf("seed %d: after %s, the view of node %q routes %+v; want %+v", seed, s.ID, node, got, to)
				}
			}
			taken = append(taken, split.Fleet(), want)
		}
		for i := 0; i < len(taken); i += 2 {
			if !reflect.DeepEqual(taken[i], taken[i+1]) {
				t.Fatalf("seed %d: the fleet ByNode gave after step %d changed with the steps after it", seed, i/2)
			}
		}
		allErr := all.ApplyAll(steps)
		if fmt.Sprint(oneErr) != fmt.Sprint(allErr) {
			t.Fatalf("seed %d: Apply one at a time: %v; ApplyAll: %v", seed, oneErr, allErr)
		}
		one.Normalize()
		all.Normalize()
		if !reflect.DeepEqual(one, all) {
			t.Fatalf("seed %d: fleets differ\none at a time: %+v\nApplyAll:       %+v", seed, one, all)
		}
	}
}
