package pools

import (
	"fmt"
	"strings"
)

// Unobserved is a target the last refresh could not observe: a node, the
// gateway, a pod-pool member or a member's registry. What the state
// records there is kept, but is not known to be true: unknown is not
// absent, and the planner plans nothing on it (compiler.Plan) unless the
// node is known to be down.
type Unobserved struct {
	// Plugin is the plugin that could not observe it.
	Plugin string
	// Kind is what the target is.
	Kind TargetKind
	// Name is the node, for a node.
	Name string
	// PodPool and Context name the member, for a member or registry.
	PodPool, Context string
	// Cause is why: "unreachable", "host-key-unknown",
	// "host-key-changed", "timeout", "refused" or "other".
	Cause string
	// Detail is what the plugin saw and what to do.
	Detail string
}

// TargetKind is what kind of target an Unobserved names (the protocol's
// sdk.TargetKind).
type TargetKind string

// The target kinds: a node (Unobserved.Name), the gateway, a pod-pool
// member or a member's registry (Unobserved.PodPool and Context).
const (
	// TargetNode names a node (Unobserved.Name).
	TargetNode TargetKind = "node"
	// TargetGateway names the gateway.
	TargetGateway TargetKind = "gateway"
	// TargetMember names a pod-pool member (Unobserved.PodPool and
	// Context).
	TargetMember TargetKind = "member"
	// TargetRegistry names a pod-pool member's registry
	// (Unobserved.PodPool and Context).
	TargetRegistry TargetKind = "registry"
)

// Target names the target for the operator: node "n1", the gateway,
// member "ctx" of pod pool "p", the registry of member "ctx" of pod
// pool "p".
func (u Unobserved) Target() string {
	switch u.Kind {
	case TargetNode:
		return fmt.Sprintf("node %q", u.Name)
	case TargetGateway:
		return "the gateway"
	case TargetRegistry:
		return fmt.Sprintf("the registry of member %q of pod pool %q", u.Context, u.PodPool)
	}
	return fmt.Sprintf("member %q of pod pool %q", u.Context, u.PodPool)
}

// UnobservedNode returns what the refresh could not observe of the node,
// or nil when it observed it (or was not asked).
func (f *Fleet) UnobservedNode(node string) *Unobserved {
	for i, u := range f.Unobserved {
		if u.Kind == TargetNode && u.Name == node {
			return &f.Unobserved[i]
		}
	}
	return nil
}

// TakenDown is a node a plan takes as down although the refresh could not
// observe it, or because the operator said so. Its lanes are placed
// elsewhere; when it was not observed, nothing is sent to it and the
// state keeps recording the lanes it had there (Lanes) as they were, until
// a refresh observes the node again (and the plan stops what still runs
// there) or sees them gone.
type TakenDown struct {
	// Node is the node.
	Node string `json:"node"`
	// By is who says it is down: ByMembership or ByOperator.
	By string `json:"by"`
	// Cause is why the refresh could not observe it, "" when it did.
	Cause string `json:"cause,omitempty"`
	// Lanes are the lanes the state records there, when it was not
	// observed.
	Lanes []string `json:"lanes,omitempty"`
}

// Who says a node a plan takes as down is down.
const (
	// ByMembership: the node's agent's membership lease lapsed.
	ByMembership = "membership lease"
	// ByOperator: plan or apply --assume-down.
	ByOperator = "--assume-down"
)

// String says it for the operator: `n3 (--assume-down; not observed:
// refused): nothing is sent to it; its lanes scribe, chat are placed on
// other nodes where they fit, and stay recorded there until it is
// observed again`.
func (t TakenDown) String() string {
	s := t.Node + " (" + t.By
	if t.Cause != "" {
		s += "; not observed: " + t.Cause
	}
	s += ")"
	if len(t.Lanes) > 0 {
		s += ": nothing is sent to it; its lanes " + strings.Join(t.Lanes, ", ") + " are placed on other nodes where they fit, and stay recorded there until it is observed again"
	}
	return s
}
