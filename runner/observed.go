package runner

import (
	"fmt"
	"slices"
	"strings"

	"poolc.dev/poolc/pools"
)

// observedEffect is the step as the state records it when its plugin
// reported the target after the step: the step with its lane, route,
// weights file or member as observed. It is an error, naming what was
// seen and what the step was to do, when the observation contradicts the
// step: a started lane that is not running or runs another model or port,
// a stopped lane still running, a route pointing elsewhere, weights that
// are not there, a member that is missing or set up otherwise, an image
// whose digest is not the one the step pins.
func observedEffect(s pools.Step, seen *pools.Fleet) (pools.Step, error) {
	seen.Normalize()
	out := s
	switch s.Kind {
	case pools.StepStart, pools.StepResidency, pools.StepDrain:
		want := *s.Lane
		got := seen.Process(want.Name, want.Node, want.Port)
		if got == nil {
			got = seen.Lane(want.Name, want.Node) // on another port: laneDiff says so
		}
		if got == nil {
			return s, fmt.Errorf("lane %s is not running on %s after the step, which was to %s it", want.Name, want.Node, s.Kind)
		}
		if diff := laneDiff(want, *got, s.Kind == pools.StepResidency || s.Kind == pools.StepStart); diff != "" {
			return s, fmt.Errorf("lane %s on %s runs with %s after the step", want.Name, want.Node, diff)
		}
		l := *got
		if l.MemoryGB == 0 {
			l.MemoryGB = want.MemoryGB
		}
		if l.Path == "" {
			l.Path = want.Path
		}
		if l.SHA256 == "" {
			l.SHA256 = want.SHA256
		}
		if l.Source == "" {
			l.Source = want.Source
		}
		out.Lane = &l
	case pools.StepStop:
		if seen.Process(s.Lane.Name, s.Lane.Node, s.Lane.Port) != nil {
			return s, fmt.Errorf("lane %s is still running on %s after the step, which was to stop it", s.Lane.Name, s.Lane.Node)
		}
	case pools.StepRoute:
		got := seen.Route(s.Route.Alias)
		switch {
		case s.Route.Lane == "" && got != nil:
			return s, fmt.Errorf("alias %s still routes to %s after the step, which was to remove it", s.Route.Alias, endpoint(got.Lane, got.Node))
		case s.Route.Lane == "":
		case got == nil:
			return s, fmt.Errorf("alias %s routes nowhere after the step, which was to route it to %s", s.Route.Alias, endpoint(s.Route.Lane, s.Route.Node))
		case got.Lane != s.Route.Lane || got.Node != s.Route.Node || got.Port != 0 && s.Route.Port != 0 && got.Port != s.Route.Port:
			return s, fmt.Errorf("alias %s routes to %s after the step, which was to route it to %s", s.Route.Alias, endpoint(got.Lane, got.Node), endpoint(s.Route.Lane, s.Route.Node))
		}
	case pools.StepPrefetch:
		want := *s.Prefetch
		i := slices.IndexFunc(seen.Prefetched, func(p pools.Prefetch) bool {
			return p.Node == want.Node && p.Model == want.Model && (want.Path == "" || p.Path == want.Path)
		})
		if i < 0 {
			return s, fmt.Errorf("the weights of %s are not on %s after the step, which was to copy them there", want.Model, want.Node)
		}
		if got := seen.Prefetched[i].SHA256; got != "" && want.SHA256 != "" && got != want.SHA256 {
			return s, fmt.Errorf("the weights of %s on %s have sha256 %s after the step, which was to copy %s", want.Model, want.Node, got, want.SHA256)
		}
	case pools.StepMemberEnsure, pools.StepImageSync:
		want := *s.Member
		i := slices.IndexFunc(seen.Members, func(m pools.MemberState) bool { return m.Key() == want.Key() })
		if i < 0 {
			return s, fmt.Errorf("member %s of pod pool %s is not set up after the step", want.Context, want.PodPool)
		}
		got := seen.Members[i]
		if s.Kind == pools.StepMemberEnsure && (got.Capacity != want.Capacity || got.Registry != want.Registry) {
			return s, fmt.Errorf("member %s of pod pool %s has capacity %d and registry %q after the step, which was to set %d and %q",
				want.Context, want.PodPool, got.Capacity, got.Registry, want.Capacity, want.Registry)
		}
		// The image recorded is only ever one the image-sync plugin read
		// back from the member's registry; a member-ensure keeps the one
		// the plan carried (the image a sync verified before, or none).
		m := want
		if s.Kind == pools.StepImageSync {
			if d := pools.ImageDigest(want.Image); got.Image == "" || d != "" && pools.ImageDigest(got.Image) != d {
				return s, fmt.Errorf("the registry of member %s serves %q after the step, which was to copy %s", want.Context, got.Image, want.Image)
			}
			m.Image = got.Image
		}
		out.Member = &m
	case pools.StepMemberRemove:
		if slices.ContainsFunc(seen.Members, func(m pools.MemberState) bool { return m.Key() == s.Member.Key() }) {
			return s, fmt.Errorf("member %s of pod pool %s is still set up after the step, which was to remove it", s.Member.Context, s.Member.PodPool)
		}
	}
	return out, nil
}

// laneDiff names the fields of a lane as seen that differ from the lane a
// step wanted: model, port, weights file and, when residency counts, the
// residency. It is "" when they agree.
func laneDiff(want, got pools.LaneState, residency bool) string {
	var diffs []string
	if got.Model != want.Model {
		diffs = append(diffs, fmt.Sprintf("model %s (the step wanted %s)", got.Model, want.Model))
	}
	if got.Port != want.Port {
		diffs = append(diffs, fmt.Sprintf("port %d (the step wanted %d)", got.Port, want.Port))
	}
	if got.Path != "" && want.Path != "" && got.Path != want.Path {
		diffs = append(diffs, fmt.Sprintf("weights %s (the step wanted %s)", got.Path, want.Path))
	}
	if residency && got.Residency != want.Residency {
		diffs = append(diffs, fmt.Sprintf("residency %s (the step wanted %s)", got.Residency, want.Residency))
	}
	return strings.Join(diffs, ", ")
}

func endpoint(lane, node string) string {
	if node == "" {
		return lane
	}
	return lane + "@" + node
}
