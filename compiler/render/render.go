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
		t = "prefetch " + s.Prefetch.Model + "@" + s.Prefetch.Node + " (" + pools.GB(s.Prefetch.SizeGB) + ")"
	case pools.StepStart:
		t = "start " + processText(p, *s.Lane) + " (" + string(s.Lane.Residency) + ", " + pools.GB(s.Lane.MemoryGB) + ")"
	case pools.StepResidency:
		t = fmt.Sprintf("residency %s: %s → %s", processText(p, *s.Lane), s.From, s.Lane.Residency)
	case pools.StepRoute:
		t = routeTitle(p, s)
	case pools.StepDrain:
		t = "drain " + processText(p, *s.Lane)
	case pools.StepStop:
		t = "stop " + processText(p, *s.Lane)
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
		t += " ~" + pools.Num(s.Estimate.Seconds) + "s"
	}
	return t
}

func routeTitle(p *pools.Plan, s pools.Step) string {
	r := *s.Route
	var t string
	if r.Lane == "" {
		t = fmt.Sprintf("route %s removed", r.Alias)
	} else {
		t = "route " + r.Alias + " → " + routeTo(p, r)
	}
	if strings.HasSuffix(s.ID, "~interim") {
		return t + " (interim)"
	}
	if was := p.Before.Route(r.Alias); was != nil && *was != r {
		t += fmt.Sprintf(" (was %s)", routeTo(p, *was))
	}
	return t
}

// processText names a lane process as LANE@NODE, with :PORT when the plan
// holds two processes of the lane on the node (one replaces the other).
func processText(p *pools.Plan, l pools.LaneState) string {
	t := l.Name + "@" + l.Node
	for _, f := range [...]*pools.Fleet{&p.Before, &p.After} {
		for _, o := range f.Instances(l.Name) {
			if o.Node == l.Node && o.Port != l.Port {
				return fmt.Sprintf("%s:%d", t, l.Port)
			}
		}
	}
	return t
}

// routeTo names where a route goes, as processText names the process.
func routeTo(p *pools.Plan, r pools.Route) string {
	if r.Lane == pools.Cloud || r.Node == "" || r.Port == 0 {
		return routeText(r)
	}
	return processText(p, pools.LaneState{Name: r.Lane, Node: r.Node, Port: r.Port}) + viaRouter(r)
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
