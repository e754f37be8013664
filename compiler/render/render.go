// Package render shows plans: as text for a terminal (symbols, a reason
// per step, its dependencies, the state diff and a summary line), as
// versioned JSON for machines, and as Markdown for pull-request comments.
package render

import (
	"fmt"
	"strings"

	"poolc.dev/poolc/pools"
)

// Title is the one-line description of a step, without its symbol:
// "start cognition@spark-node-03 (keep-warm, 30 GB, ~13.5s)".
func Title(p *pools.Plan, s pools.Step) string {
	var t string
	switch s.Kind {
	case pools.StepPrefetch:
		t = fmt.Sprintf("prefetch %s@%s (%s)", s.Prefetch.Model, s.Prefetch.Node, pools.GB(s.Prefetch.SizeGB))
	case pools.StepStart:
		t = fmt.Sprintf("start %s@%s (%s, %s)", s.Lane.Name, s.Lane.Node, s.Lane.Residency, pools.GB(s.Lane.MemoryGB))
	case pools.StepResidency:
		t = fmt.Sprintf("residency %s@%s: %s → %s", s.Lane.Name, s.Lane.Node, s.From, s.Lane.Residency)
	case pools.StepRoute:
		t = routeTitle(p, s)
	case pools.StepDrain:
		t = fmt.Sprintf("drain %s@%s", s.Lane.Name, s.Lane.Node)
	case pools.StepStop:
		t = fmt.Sprintf("stop %s@%s", s.Lane.Name, s.Lane.Node)
		if r := s.Lane.Reserved(); r > 0 {
			t += fmt.Sprintf(" (frees %s)", pools.GB(r))
		}
	case pools.StepMemberEnsure:
		t = fmt.Sprintf("member-ensure %s (capacity %d", s.Member.Key(), s.Member.Capacity)
		if s.Member.Registry != "" {
			t += ", registry " + s.Member.Registry
		}
		t += ")"
	case pools.StepImageSync:
		t = fmt.Sprintf("image-sync %s to %s (%s", s.Member.Image, s.Member.Key(), s.Member.Registry)
		if n := s.Estimate.TransferBytes; n > 0 {
			t += fmt.Sprintf(", %s to send", pools.Bytes(n))
		}
		t += ")"
	case pools.StepMemberRemove:
		t = "member-remove " + s.Member.Key()
	default:
		t = string(s.Kind) + " " + s.Target
	}
	if s.Kind == pools.StepPrefetch || s.Kind == pools.StepStart {
		t += fmt.Sprintf(" ~%ss", pools.Num(s.Estimate.Seconds))
	}
	return t
}

func routeTitle(p *pools.Plan, s pools.Step) string {
	r := *s.Route
	var t string
	if r.Lane == "" {
		t = fmt.Sprintf("route %s removed", r.Alias)
	} else {
		t = fmt.Sprintf("route %s → %s", r.Alias, routeText(r))
	}
	if strings.HasSuffix(s.ID, "~interim") {
		return t + " (interim)"
	}
	if was := p.Before.Route(r.Alias); was != nil && *was != r {
		t += fmt.Sprintf(" (was %s)", routeText(*was))
	}
	return t
}

// Unplaced describes a lane that cannot be placed and every excluded node.
func Unplaced(u pools.Unplaced) []string {
	lines := []string{fmt.Sprintf("lane %s (%s, %s) cannot be placed:", u.Lane, pools.GB(u.MemoryGB), u.Residency)}
	if len(u.Excluded) == 0 {
		lines = append(lines, "  it has no candidate node")
	}
	for _, e := range u.Excluded {
		lines = append(lines, fmt.Sprintf("  %s %s", e.Node, e.Why))
	}
	return lines
}
