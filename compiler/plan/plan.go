// Package plan diffs the desired fleet against the current one into a
// step plan: a DAG of steps that is safe in every order a runner may pick.
//
// Diff is a pure function of its Input, the clock included. The rules:
//   - make-before-break: a lane that moves is prefetched and started on
//     its new node, its aliases flip to it, and only then is the old
//     process drained and stopped; so is a lane whose residency crosses
//     on-demand (its node's router serves it, not a process of its own):
//     it starts as it will be beside itself as it was, on its node;
//   - memory is tracked per node through the DAG: a step that needs memory
//     a stop or residency downgrade frees depends on enough of those, so
//     no topological order passes a node's budget;
//   - where the old process must go first (the gating would make a cycle,
//     or the lane is replaced on the same node), its aliases move to an
//     interim (a stable lane of the same model, else a declared fallback)
//     and back; with no interim the plan reports the interruption;
//   - a step that fails makes its dependents skip, so an alias is never
//     flipped to a lane that did not start.
package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/pools"
)

// Estimates used for step durations. They are deliberately simple; the
// simulator models the same quantities in detail.
const (
	// PrefetchGBps is the rate weights copy to a node (a 10 GbE link).
	PrefetchGBps = 1.0
	// LoadGBps is the rate a model loads from local disk into memory.
	LoadGBps = 2.0
	// StartSeconds is a lane's start-up beyond loading its weights.
	StartSeconds = 5.0
	// DrainSeconds is how long a drain waits for requests in flight.
	DrainSeconds = 10.0
	// StopSeconds is how long stopping a process takes.
	StopSeconds = 2.0
	// RouteSeconds is how long a gateway takes to flip an alias.
	RouteSeconds = 1.0
	// MemberSeconds is how long setting up or tearing down a member takes.
	MemberSeconds = 5.0
	// ImageSyncSeconds is the estimate for copying an image's missing layers.
	ImageSyncSeconds = 30.0
)

// Input is everything a plan depends on.
type Input struct {
	Pool *pools.Pool
	// Profile is the profile in force ("" for the pool's active one).
	Profile string
	// Placement is the desired fleet and why each lane is where it is.
	Placement place.Result
	// Current is the fleet as it is now.
	Current pools.Fleet
	// Unreached are nodes taken as down that could not be observed:
	// what Current records there is left as it is, since no step can
	// reach them (their lanes are placed elsewhere by Placement).
	Unreached map[string]bool
	// Now stamps the plan.
	Now time.Time
}

// Diff computes the plan that takes Current to Placement.Desired.
func Diff(in Input) (*pools.Plan, error) {
	if in.Profile == "" {
		in.Profile = in.Pool.ActiveProfile
	}
	cur := in.Current.Clone()
	des := in.Placement.Desired.Clone()
	spare := in.Pool.SparePorts(&des)
	resolve(in.Pool, spare, &cur, &des)
	breakFirst := map[string]bool{} // lanes whose old process goes first
	for {
		b := newBuilder(in, cur, des, spare, breakFirst)
		b.build()
		steps, ordered, err := b.order()
		if err != nil {
			return nil, err
		}
		if ordered {
			return b.finish(steps)
		}
		cycle := b.cycle()
		lane := b.moveIn(cycle)
		if lane == "" {
			return nil, fmt.Errorf("plan: cannot order steps %s without a cycle", strings.Join(cycle, " -> "))
		}
		breakFirst[lane] = true
	}
}

// builder lays out a plan and orders its steps. Its parts, which share the
// draft and the words of its reasons (reasons), lay out the lanes' steps,
// what serves an alias while its lane breaks first, the route steps at
// the gateway, the steps of the pod pools' members and the edges that
// keep each node within its memory budget.
type builder struct {
	*draft
	lanes     *laneSteps
	meanwhile *interims
	gateway   *gateway
	podPools  *podPools
	budgets   *budgets
}

// draft is the plan being laid out, which every part of the builder reads
// and adds steps to: the input, both fleets, the steps so far and what
// the lanes' steps decided.
type draft struct {
	in         Input
	cur, des   pools.Fleet
	breakFirst map[string]bool
	steps      []*pools.Step
	byID       map[string]*pools.Step
	// makeBeforeBreak marks the drain steps that wait for their lane's new
	// process; they are where a cycle can be broken.
	makeBeforeBreak map[string]string // drain step ID -> lane
	// gone lists the processes the plan stops.
	gone map[process]bool
	// ports are the lanes' declared ports, spare their spare ones on the
	// nodes they are placed on (pools.Pool.SparePorts).
	ports, spare map[string]int
}

// process identifies a lane process: lane, node and port, and whether
// the node's router serves it (on-demand) rather than a process of its own.
type process struct {
	lane, node string
	port       int
	routed     bool
}

func processOf(l pools.LaneState) process {
	return process{l.Name, l.Node, l.Port, l.Residency == pools.OnDemand}
}

// sameProcess reports whether c and d run as the same kind of process:
// both on-demand (models of the node's router) or neither (a process of
// their own). A residency change between the two kinds starts the lane as
// it will be beside the lane as it was.
func sameProcess(c, d pools.LaneState) bool {
	return (c.Residency == pools.OnDemand) == (d.Residency == pools.OnDemand)
}

func newBuilder(in Input, cur, des pools.Fleet, spare map[string]int, breakFirst map[string]bool) *builder {
	ports := map[string]int{}
	for _, l := range in.Pool.Lanes {
		ports[l.Name] = l.Port
	}
	df := &draft{in: in, cur: cur, des: des, breakFirst: breakFirst, ports: ports, spare: spare,
		byID: map[string]*pools.Step{}, makeBeforeBreak: map[string]string{}, gone: map[process]bool{}}
	why := &reasons{draft: df}
	meanwhile := &interims{draft: df, why: why}
	return &builder{
		draft:     df,
		lanes:     &laneSteps{draft: df, why: why},
		meanwhile: meanwhile,
		gateway:   &gateway{draft: df, why: why, meanwhile: meanwhile},
		podPools:  &podPools{draft: df},
		budgets:   &budgets{draft: df},
	}
}

func (df *draft) add(s pools.Step) *pools.Step {
	if have, ok := df.byID[s.ID]; ok {
		return have
	}
	if s.DependsOn == nil {
		s.DependsOn = []string{}
	}
	p := &s
	df.steps = append(df.steps, p)
	df.byID[s.ID] = p
	return p
}

func dependOn(s *pools.Step, ids ...string) {
	for _, id := range ids {
		if id != "" && id != s.ID && !slices.Contains(s.DependsOn, id) {
			s.DependsOn = append(s.DependsOn, id)
		}
	}
}

// laneID is the ID of a step of a lane process: KIND:LANE@NODE, with
// :PORT when the process listens on another port than the lane declares
// (a lane replaced on its node runs a second process there), or, for a
// lane the pool no longer declares, when it runs several on the node.
func (df *draft) laneID(kind pools.StepKind, l pools.LaneState) string {
	id := fmt.Sprintf("%s:%s@%s", kind, l.Name, l.Node)
	declared, ok := df.ports[l.Name]
	if ok && l.Port != declared || !ok && df.onNode(l.Name, l.Node) > 1 {
		id += fmt.Sprintf(":%d", l.Port)
	}
	return id
}

// onNode counts the current processes of a lane on a node.
func (df *draft) onNode(lane, node string) int {
	n := 0
	for _, c := range df.cur.Instances(lane) {
		if c.Node == node {
			n++
		}
	}
	return n
}

// build lays out every step and its ordering edges, memory included.
func (b *builder) build() {
	b.lanes.prefetches()
	for _, name := range b.lanes.laneNames() {
		b.lanes.lane(name)
	}
	b.gateway.routes()
	b.podPools.members()
	b.budgets.memory()
}

func (df *draft) sizeOf(model string) float64 {
	if m := df.in.Pool.Model(model); m != nil {
		return m.SizeGB
	}
	return 0
}
