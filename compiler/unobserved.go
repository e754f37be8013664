package compiler

import (
	"fmt"
	"slices"
	"strings"

	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/pools"
)

// UnobservedError refuses to plan while targets could not be observed:
// what runs there is unknown, and unknown is not absent, so poolc neither
// starts elsewhere, stops nor routes away anything on them.
type UnobservedError struct {
	// Targets are the targets the refresh could not observe, that are
	// not nodes known to be down.
	Targets []pools.Unobserved
}

// Error implements error: each target with its plugin, cause and detail,
// then what the operator can do.
func (e *UnobservedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s could not be observed, so what runs there is unknown; nothing is planned until it is:", plural.Count(len(e.Targets), "target"))
	node, hostKey := "", false
	for _, u := range e.Targets {
		hostKey = hostKey || strings.HasPrefix(u.Cause, "host-key-")
		fmt.Fprintf(&b, "\n  %s (plugin %s): %s", u.Target(), u.Plugin, u.Cause)
		for _, line := range strings.Split(strings.TrimSpace(u.Detail), "\n") {
			if line != "" {
				fmt.Fprintf(&b, "\n    %s", line)
			}
		}
		if u.Kind == pools.TargetNode && node == "" {
			node = u.Name
		}
	}
	b.WriteString("\nTo go on: make it observable again")
	if hostKey {
		b.WriteString(" (for a host key: check the fingerprint with the host's owner, then fix known_hosts as said above)")
	}
	if node != "" {
		fmt.Fprintf(&b, "; or, if a node is really down, say so with --assume-down %s, and its lanes are placed elsewhere", node)
	}
	b.WriteString("; or plan from the state file alone with --refresh=false.")
	return b.String()
}

// settle decides what the plan makes of the targets the refresh could not
// observe (current.Unobserved): a node that is down by its membership
// (current says so) or by the operator (assumeDown) is taken as down, and
// nothing is planned there; any other target is an *UnobservedError. It
// returns the nodes taken as down (every node of assumeDown among them),
// each with the lanes current records there when it was not observed,
// and the set of those not observed.
func settle(current *pools.State, assumeDown []string) ([]pools.TakenDown, map[string]bool, error) {
	var unknown []pools.Unobserved
	var taken []pools.TakenDown
	unreached := map[string]bool{}
	for _, u := range current.Unobserved {
		t := pools.TakenDown{Node: u.Name, Cause: u.Cause}
		switch {
		case u.Kind == pools.TargetNode && slices.Contains(assumeDown, u.Name):
			t.By = pools.ByOperator
		case u.Kind == pools.TargetNode && current.IsDown(u.Name):
			t.By = pools.ByMembership
		default:
			unknown = append(unknown, u)
			continue
		}
		for _, l := range current.Lanes {
			if l.Node == u.Name {
				t.Lanes = append(t.Lanes, l.Name)
			}
		}
		unreached[u.Name] = true
		taken = append(taken, t)
	}
	if len(unknown) > 0 {
		return nil, nil, &UnobservedError{Targets: unknown}
	}
	for _, n := range assumeDown {
		if !unreached[n] {
			taken = append(taken, pools.TakenDown{Node: n, By: pools.ByOperator})
		}
	}
	return taken, unreached, nil
}

// CheckUnobserved returns the *UnobservedError a plan of current would
// meet, or nil: apply checks it before a saved plan, so a target that
// cannot be observed is named as such, not as a stale plan.
func CheckUnobserved(current *pools.State, assumeDown []string) error {
	if _, _, err := settle(current, assumeDown); err != nil {
		return err
	}
	return nil
}
