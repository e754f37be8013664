package pools

import (
	"fmt"
	"strings"
	"time"

	"poolc.dev/poolc/internal/plural"
)

// PlanFormatVersion is the version of the plan document (JSON output and
// saved plan files).
const PlanFormatVersion = 1

// StepKind is the action a step takes. Each kind documents what its step's
// fields mean; Fleet.Apply is the reference for its effect on state.
type StepKind string

// The step kinds, in the order a summary lists them.
const (
	// StepPrefetch copies Prefetch.Model's weights to Prefetch.Path on
	// Prefetch.Node. The planner never names a path a running process
	// holds with other content (it stages new weights beside it).
	StepPrefetch StepKind = "prefetch"
	// StepStart starts Lane on Lane.Node and Lane.Port: loads it when its
	// residency is keep-warm or preferred, registers it for on-demand
	// loading otherwise. A lane replaced on its node runs a second
	// process, on another port, until the old one stops. A lane whose
	// residency crosses on-demand (served by its node's router, not a
	// process of its own) starts as it will be beside the lane as it was,
	// under the same port; From then names the residency it had.
	StepStart StepKind = "start"
	// StepResidency changes Lane's residency from From to Lane.Residency in
	// place, between keep-warm and preferred.
	StepResidency StepKind = "residency"
	// StepRoute points Route.Alias at Route.Lane (on Route.Node); a nil
	// Route.Lane ("") removes the alias from the gateway.
	StepRoute StepKind = "route"
	// StepDrain stops Lane (on Lane.Node, Lane.Port) taking new requests
	// and waits for the requests in flight.
	StepDrain StepKind = "drain"
	// StepStop stops Lane on Lane.Node and Lane.Port and frees its memory.
	StepStop StepKind = "stop"
	// StepMemberEnsure creates or updates Member's namespace, quota for its
	// capacity, limit range and registry wiring.
	StepMemberEnsure StepKind = "member-ensure"
	// StepImageSync copies Member.Image to Member's registry, missing
	// layers only.
	StepImageSync StepKind = "image-sync"
	// StepMemberRemove tears down what member-ensure set up for Member.
	StepMemberRemove StepKind = "member-remove"
)

// StepKinds lists every kind in summary order.
var StepKinds = []StepKind{StepPrefetch, StepStart, StepResidency, StepRoute, StepDrain, StepStop, StepMemberEnsure, StepImageSync, StepMemberRemove}

// Symbol is the mark a step of this kind gets in a text plan: + adds,
// ~ changes, - takes away.
func (k StepKind) Symbol() string {
	switch k {
	case StepPrefetch, StepStart, StepMemberEnsure, StepImageSync:
		return "+"
	case StepResidency, StepRoute:
		return "~"
	}
	return "-"
}

// Step is one action of a plan. ID is unique in the plan and stable for
// the same inputs; DependsOn lists the IDs that must succeed first. Only
// the detail field of its Kind is set (see StepKind).
type Step struct {
	ID        string       `json:"id"`
	Kind      StepKind     `json:"kind"`
	Target    string       `json:"target"`
	Node      string       `json:"node,omitempty"`
	DependsOn []string     `json:"depends_on"`
	Reason    string       `json:"reason"`
	Estimate  Estimate     `json:"estimate"`
	Lane      *LaneState   `json:"lane,omitempty"`
	From      Residency    `json:"from,omitempty"`
	Route     *Route       `json:"route,omitempty"`
	Prefetch  *Prefetch    `json:"prefetch,omitempty"`
	Member    *MemberState `json:"member,omitempty"`
}

// ChangesResidency reports whether the step changes its lane's
// residency: in place, or by starting it across on-demand (From set).
func (s Step) ChangesResidency() bool {
	return s.Kind == StepResidency || s.Kind == StepStart && s.From != ""
}

// Estimate is what a step is expected to cost: seconds of work, GB moved
// over the network, and the change in reserved memory on its node.
// TransferBytes is the exact count behind TransferGB when a plugin
// measured it (an image-sync's missing blobs and manifests), 0 otherwise.
type Estimate struct {
	Seconds       float64 `json:"seconds"`
	TransferGB    float64 `json:"transfer_gb,omitempty"`
	TransferBytes int64   `json:"transfer_bytes,omitempty"`
	MemoryGB      float64 `json:"memory_gb,omitempty"`
}

// Interruption is a time an alias cannot be served during the plan: its
// lane must stop before it can start again and there is no interim.
type Interruption struct {
	Alias   string  `json:"alias"`
	Lane    string  `json:"lane"`
	Seconds float64 `json:"seconds"`
	Reason  string  `json:"reason"`
}

// Exclusion says why a candidate node was passed over. Why reads as a
// predicate of the node: "is cordoned by profile pair-taken", "is down",
// "has 48.3 GB free of its budget ...; needs 70 GB".
type Exclusion struct {
	Node string `json:"node"`
	Why  string `json:"why"`
}

// Unplaced is a lane the placer could not put on any node, with every
// candidate and why it was excluded, as a scheduler's dry run shows it.
type Unplaced struct {
	Lane      string      `json:"lane"`
	Residency Residency   `json:"residency"`
	MemoryGB  float64     `json:"memory_gb"`
	Excluded  []Exclusion `json:"excluded"`
}

// Unserved is an alias with no route at all: neither its lane nor any
// fallback is placed.
type Unserved struct {
	Alias string `json:"alias"`
	Why   string `json:"why"`
}

// MayHaveRun is a step that may have run: an interrupted apply had sent
// it to a plugin and was killed before the answer, and the plugin does
// not observe Part, the part of a fleet the step changes (sdk.Observe*),
// so a refresh cannot tell whether it did. Planned says the plan holds
// the step again, so applying it would send the step a second time.
type MayHaveRun struct {
	Step    string `json:"step"`
	Plugin  string `json:"plugin"`
	Part    string `json:"part"`
	Planned bool   `json:"planned"`
}

// Why is the sentence that reports the step, for every output form.
func (m MayHaveRun) Why() string {
	return fmt.Sprintf("%s may have run: the last apply was killed while it was in flight, and plugin %s does not observe %s", m.Step, m.Plugin, m.Part)
}

// Plan is the ordered set of steps that takes the current fleet (Before)
// to the desired one (After), with what it cannot do without interrupting
// service and what it cannot place.
type Plan struct {
	FormatVersion int            `json:"format_version"`
	Pool          string         `json:"pool"`
	Profile       string         `json:"profile,omitempty"`
	PlannedAt     time.Time      `json:"planned_at"`
	Steps         []Step         `json:"steps"`
	Interruptions []Interruption `json:"interruptions"`
	Unplaced      []Unplaced     `json:"unplaced"`
	Unserved      []Unserved     `json:"unserved"`
	// MayHaveRun are the steps the last apply, killed, left in flight
	// that may have run (see MayHaveRun); only a plan made from a state
	// whose last apply was interrupted has them.
	MayHaveRun []MayHaveRun `json:"may_have_run,omitempty"`
	// TakenDown lists the nodes the plan takes as down that the refresh
	// could not observe or the operator named (see TakenDown).
	TakenDown []TakenDown `json:"taken_down,omitempty"`
	Before    Fleet       `json:"before"`
	After     Fleet       `json:"after"`
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Steps) == 0 }

// Step returns the step with the ID, or nil.
func (p *Plan) Step(id string) *Step {
	for i := range p.Steps {
		if p.Steps[i].ID == id {
			return &p.Steps[i]
		}
	}
	return nil
}

// TransferGB is the total of weights and images the plan copies.
func (p *Plan) TransferGB() float64 {
	total := 0.0
	for _, s := range p.Steps {
		total += s.Estimate.TransferGB
	}
	return total
}

// Summary is the one-line account of a plan:
// "Plan: 2 prefetch, 2 start, 3 route, 1 drain, 1 stop · moves 34.4 GB · interruptions: none",
// with "· unserved: ALIAS, ..." when the plan leaves aliases unserved.
func (p *Plan) Summary() string {
	var unserved string
	if len(p.Unserved) > 0 {
		names := make([]string, len(p.Unserved))
		for i, u := range p.Unserved {
			names[i] = u.Alias
		}
		unserved = strings.Join(names, ", ")
	}
	if p.Empty() {
		if unserved != "" {
			return fmt.Sprintf("No changes, but %s %s unserved: %s.", plural.Count(len(p.Unserved), "alias"), plural.Agree(len(p.Unserved), "is", "are"), unserved)
		}
		return "No changes. The fleet matches the configuration."
	}
	counts := map[StepKind]int{}
	for _, s := range p.Steps {
		counts[s.Kind]++
	}
	var parts []string
	for _, k := range StepKinds {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	interruptions := "none"
	if n := len(p.Interruptions); n > 0 {
		names := make([]string, n)
		for i, in := range p.Interruptions {
			names[i] = fmt.Sprintf("%s ~%ss", in.Alias, Num(in.Seconds))
		}
		interruptions = strings.Join(names, ", ")
	}
	s := fmt.Sprintf("Plan: %s · moves %s · interruptions: %s", strings.Join(parts, ", "), GB(p.TransferGB()), interruptions)
	if unserved != "" {
		s += " · unserved: " + unserved
	}
	return s
}

// SavedPlanFormatVersion is the version of saved plan files. Version 2
// binds the plan to the state's content (StateHash) and records the
// what-if assumptions it was made with (AssumeDown). Version 3 is the
// same file, planned with spare ports per node (Pool.SparePorts); a
// version 2 plan still applies when planning it again gives the same
// plan, else it is refused as stale (see SavedPlanSparePortsPerNode).
const SavedPlanFormatVersion = 3

// SavedPlanSparePortsPerNode is the first saved plan format version
// planned with spare ports per node: an older plan chose them pool-wide.
const SavedPlanSparePortsPerNode = 3

// SavedPlanBoundToState is the oldest saved plan format version poolc
// reads: an older one does not bind the plan to the state's content.
const SavedPlanBoundToState = 2

// SavedPlan is a plan written to a file by `poolc plan --out`, bound to
// what it was made from: a saved plan is refused when the configuration's
// hash, or the state's lineage, serial or content, no longer match, or
// when its steps are not the ones poolc plans from them (see
// compiler.CheckSavedPlan).
//
// Its file form is compiler/planjson's SavedPlan.
type SavedPlan struct {
	FormatVersion int
	PoolcVersion  string
	ConfigHash    string
	ConfigFiles   []string
	// StateLineage is the lineage of the state planned against, or
	// NoLineage when there was no state file.
	StateLineage string
	StateSerial  int64
	// StateHash is the state's ContentHash.
	StateHash string
	// AssumeDown lists the nodes plan --assume-down treated as down.
	AssumeDown []string
	Plan       *Plan
}
