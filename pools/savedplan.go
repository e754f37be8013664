package pools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// NoLineage is the lineage a saved plan records when it was made with no
// state file: no state ever has it, so the plan binds to "no state" and
// is refused once a state exists.
const NoLineage = "none"

// LineageOf is the lineage a saved plan made against s records.
func LineageOf(s *State) string {
	if s.Lineage == "" {
		return NoLineage
	}
	return s.Lineage
}

// ContentHash is the sha256, in hex, of the state's fleet in its
// normalized form: two states hash equal exactly when they hold the same
// nodes, lanes, routes, weights and members.
func (s *State) ContentHash() string {
	f := s.Fleet
	f.Nodes = append([]NodeState(nil), f.Nodes...)
	f.Lanes = append([]LaneState(nil), f.Lanes...)
	f.Routes = append([]Route(nil), f.Routes...)
	f.Prefetched = append([]Prefetch(nil), f.Prefetched...)
	f.Members = append([]MemberState(nil), f.Members...)
	f.Normalize()
	data, err := json.Marshal(f)
	if err != nil {
		panic(err) // a Fleet is plain data and always marshals
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Check refuses a plan no poolc would write: a step without an ID or
// with one used twice, of an unknown kind, without the detail its kind
// needs (see StepKind), or depending on a step that does not come before
// it; and fleets before or after it with duplicate lanes or routes to
// lanes they do not hold.
func (p *Plan) Check() error {
	seen := make(map[string]bool, len(p.Steps))
	for i, s := range p.Steps {
		if s.ID == "" || seen[s.ID] {
			return fmt.Errorf("step %d has no ID or the ID of another step (%q)", i+1, s.ID)
		}
		if err := s.checkDetail(); err != nil {
			return fmt.Errorf("step %s: %w", s.ID, err)
		}
		for _, d := range s.DependsOn {
			if !seen[d] {
				return fmt.Errorf("step %s depends on %q, which is not an earlier step", s.ID, d)
			}
		}
		seen[s.ID] = true
	}
	if err := p.Before.check(false); err != nil {
		return fmt.Errorf("the fleet before the plan: %w", err)
	}
	if err := p.After.check(true); err != nil {
		return fmt.Errorf("the fleet after the plan: %w", err)
	}
	return nil
}

// checkDetail reports a step whose kind is unknown or lacks its detail.
func (s *Step) checkDetail() error {
	var missing bool
	switch s.Kind {
	case StepPrefetch:
		missing = s.Prefetch == nil
	case StepStart, StepResidency, StepDrain, StepStop:
		missing = s.Lane == nil || s.Lane.Name == "" || s.Lane.Node == ""
	case StepRoute:
		missing = s.Route == nil || s.Route.Alias == ""
	case StepMemberEnsure, StepImageSync, StepMemberRemove:
		missing = s.Member == nil
	default:
		return fmt.Errorf("unknown kind %q", s.Kind)
	}
	if missing {
		return fmt.Errorf("a %s step needs its %s", s.Kind, s.Kind.detail())
	}
	return nil
}

// detail names the field that carries what a step of this kind acts on.
func (k StepKind) detail() string {
	switch k {
	case StepPrefetch:
		return "prefetch"
	case StepRoute:
		return "route with an alias"
	case StepMemberEnsure, StepImageSync, StepMemberRemove:
		return "member"
	}
	return "lane with a name and a node"
}
