// Package planjson is the public JSON form of plans: the plan that
// `poolc plan --format json` prints (inside render.JSONPlan) and the
// saved plan that `poolc plan --out` writes and `poolc apply` reads. Its
// types are its own, converted from and to poolc's (pools) only here, so
// a refactor of pools never changes either format; the goldens in
// testdata guard them. Fields are only added within a format version; a
// change of meaning or a removal bumps it.
package planjson

import (
	"time"

	"poolc.dev/poolc/pools"
)

// Plan is a plan: the ordered steps that take the fleet Before to the
// fleet After, what they cannot do without interrupting an alias, the
// lanes that cannot be placed and the aliases no lane serves.
type Plan struct {
	FormatVersion int            `json:"format_version"`
	Pool          string         `json:"pool"`
	Profile       string         `json:"profile,omitempty"`
	PlannedAt     time.Time      `json:"planned_at"`
	Steps         []Step         `json:"steps"`
	Interruptions []Interruption `json:"interruptions"`
	Unplaced      []Unplaced     `json:"unplaced"`
	Unserved      []Unserved     `json:"unserved"`
	MayHaveRun    []MayHaveRun   `json:"may_have_run,omitempty"`
	TakenDown     []TakenDown    `json:"taken_down,omitempty"`
	Before        Fleet          `json:"before"`
	After         Fleet          `json:"after"`
}

// TakenDown is a node the plan takes as down: by whom ("membership
// lease" or "--assume-down"), why the refresh could not observe it (cause,
// empty when it did) and, when it was not observed, the lanes the state
// records there, left as they are while they are placed elsewhere.
type TakenDown struct {
	Node  string   `json:"node"`
	By    string   `json:"by"`
	Cause string   `json:"cause,omitempty"`
	Lanes []string `json:"lanes,omitempty"`
}

// MayHaveRun is a step the last apply, killed, had in flight and whose
// plugin does not observe what it changes (part: lanes, routes,
// prefetched, members, images), so it may have run; planned says this
// plan holds it again.
type MayHaveRun struct {
	Step    string `json:"step"`
	Plugin  string `json:"plugin"`
	Part    string `json:"part"`
	Planned bool   `json:"planned"`
}

// Step is one action: id (unique in the plan), kind, what it changes
// (target, on node), the steps it waits for, why it is planned, what it
// is expected to cost, and the detail of its kind: lane (start,
// residency with from, drain, stop), route, prefetch or member
// (member-ensure, image-sync, member-remove).
type Step struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Target    string    `json:"target"`
	Node      string    `json:"node,omitempty"`
	DependsOn []string  `json:"depends_on"`
	Reason    string    `json:"reason"`
	Estimate  Estimate  `json:"estimate"`
	Lane      *Lane     `json:"lane,omitempty"`
	From      string    `json:"from,omitempty"`
	Route     *Route    `json:"route,omitempty"`
	Prefetch  *Prefetch `json:"prefetch,omitempty"`
	Member    *Member   `json:"member,omitempty"`
}

// Estimate is a step's expected cost: seconds, GB over the network, and
// the change in reserved memory on its node in GB. TransferBytes is the
// exact count behind TransferGB when a plugin measured it: for an
// image-sync, the bytes of blobs and manifests the member's registry
// lacks.
type Estimate struct {
	Seconds       float64 `json:"seconds"`
	TransferGB    float64 `json:"transfer_gb,omitempty"`
	TransferBytes int64   `json:"transfer_bytes,omitempty"`
	MemoryGB      float64 `json:"memory_gb,omitempty"`
}

// Interruption is a time an alias has no lane during the plan.
type Interruption struct {
	Alias   string  `json:"alias"`
	Lane    string  `json:"lane"`
	Seconds float64 `json:"seconds"`
	Reason  string  `json:"reason"`
}

// Unplaced is a lane no node can take, with why each candidate cannot.
type Unplaced struct {
	Lane      string      `json:"lane"`
	Residency string      `json:"residency"`
	MemoryGB  float64     `json:"memory_gb"`
	Excluded  []Exclusion `json:"excluded"`
}

// Exclusion is why a candidate node was passed over.
type Exclusion struct {
	Node string `json:"node"`
	Why  string `json:"why"`
}

// Unserved is an alias with no route at all.
type Unserved struct {
	Alias string `json:"alias"`
	Why   string `json:"why"`
}

// Fleet is what runs: nodes, lane processes, routes, weights files on
// nodes and pod-pool members, each list sorted by its key.
type Fleet struct {
	Nodes      []Node     `json:"nodes"`
	Lanes      []Lane     `json:"lanes"`
	Routes     []Route    `json:"routes"`
	Prefetched []Prefetch `json:"prefetched"`
	Members    []Member   `json:"members"`
}

// Node is a node and whether it is down.
type Node struct {
	Name string `json:"name"`
	Down bool   `json:"down,omitempty"`
}

// Lane is one lane process on one node.
type Lane struct {
	Name      string   `json:"name"`
	Node      string   `json:"node"`
	Model     string   `json:"model"`
	Port      int      `json:"port"`
	Residency string   `json:"residency"`
	Path      string   `json:"path,omitempty"`
	SHA256    string   `json:"sha256,omitempty"`
	Source    string   `json:"source,omitempty"`
	Args      []string `json:"args,omitempty"`
	Aliases   []string `json:"aliases,omitempty"`
	MemoryGB  float64  `json:"memory_gb"`
	Loaded    bool     `json:"loaded"`
}

// Route sends an alias to a lane on a node, or to "cloud" (no node); in
// a route step, an empty lane removes the alias. Router is true when it
// reaches the lane as a model of its node's router (an on-demand lane).
type Route struct {
	Alias  string `json:"alias"`
	Lane   string `json:"lane"`
	Node   string `json:"node,omitempty"`
	Port   int    `json:"port,omitempty"`
	Router bool   `json:"router,omitempty"`
}

// Prefetch is a model's weights file on a node.
type Prefetch struct {
	Node   string  `json:"node"`
	Model  string  `json:"model"`
	Path   string  `json:"path,omitempty"`
	SHA256 string  `json:"sha256,omitempty"`
	SizeGB float64 `json:"size_gb"`
}

// Member is one cluster of a pod pool.
type Member struct {
	PodPool  string `json:"pod_pool"`
	Context  string `json:"context"`
	Priority int    `json:"priority"`
	SSHHost  string `json:"ssh_host,omitempty"`
	SSHPort  int    `json:"ssh_port,omitempty"`
	Capacity int    `json:"capacity"`
	Registry string `json:"registry,omitempty"`
	Image    string `json:"image,omitempty"`
	// PodMemoryGB is the pods' memory limit, 0 for none.
	PodMemoryGB float64 `json:"pod_memory_gb,omitempty"`
}

// FromPlan is the JSON form of a plan.
func FromPlan(p *pools.Plan) Plan {
	out := Plan{FormatVersion: p.FormatVersion, Pool: p.Pool, Profile: p.Profile, PlannedAt: p.PlannedAt,
		Steps: each(p.Steps, fromStep), Interruptions: each(p.Interruptions, func(i pools.Interruption) Interruption {
			return Interruption{Alias: i.Alias, Lane: i.Lane, Seconds: i.Seconds, Reason: i.Reason}
		}),
		Unplaced: each(p.Unplaced, func(u pools.Unplaced) Unplaced {
			return Unplaced{Lane: u.Lane, Residency: string(u.Residency), MemoryGB: u.MemoryGB,
				Excluded: each(u.Excluded, func(e pools.Exclusion) Exclusion { return Exclusion{Node: e.Node, Why: e.Why} })}
		}),
		Unserved:   each(p.Unserved, func(u pools.Unserved) Unserved { return Unserved{Alias: u.Alias, Why: u.Why} }),
		MayHaveRun: each(p.MayHaveRun, func(m pools.MayHaveRun) MayHaveRun { return MayHaveRun(m) }),
		TakenDown:  each(p.TakenDown, func(t pools.TakenDown) TakenDown { return TakenDown(t) }),
		Before:     FromFleet(p.Before), After: FromFleet(p.After)}
	return out
}

// Pools is poolc's plan for the JSON form.
func (p Plan) Pools() *pools.Plan {
	return &pools.Plan{FormatVersion: p.FormatVersion, Pool: p.Pool, Profile: p.Profile, PlannedAt: p.PlannedAt,
		Steps: each(p.Steps, Step.pools), Interruptions: each(p.Interruptions, func(i Interruption) pools.Interruption {
			return pools.Interruption{Alias: i.Alias, Lane: i.Lane, Seconds: i.Seconds, Reason: i.Reason}
		}),
		Unplaced: each(p.Unplaced, func(u Unplaced) pools.Unplaced {
			return pools.Unplaced{Lane: u.Lane, Residency: pools.Residency(u.Residency), MemoryGB: u.MemoryGB,
				Excluded: each(u.Excluded, func(e Exclusion) pools.Exclusion { return pools.Exclusion{Node: e.Node, Why: e.Why} })}
		}),
		Unserved:   each(p.Unserved, func(u Unserved) pools.Unserved { return pools.Unserved{Alias: u.Alias, Why: u.Why} }),
		MayHaveRun: each(p.MayHaveRun, func(m MayHaveRun) pools.MayHaveRun { return pools.MayHaveRun(m) }),
		TakenDown:  each(p.TakenDown, func(t TakenDown) pools.TakenDown { return pools.TakenDown(t) }),
		Before:     p.Before.pools(), After: p.After.pools()}
}

func fromStep(s pools.Step) Step {
	return Step{ID: s.ID, Kind: string(s.Kind), Target: s.Target, Node: s.Node, DependsOn: s.DependsOn, Reason: s.Reason,
		Estimate: Estimate(s.Estimate),
		Lane:     ptr(s.Lane, fromLane), From: string(s.From), Route: ptr(s.Route, fromRoute),
		Prefetch: ptr(s.Prefetch, fromPrefetch), Member: ptr(s.Member, fromMember)}
}

func (s Step) pools() pools.Step {
	return pools.Step{ID: s.ID, Kind: pools.StepKind(s.Kind), Target: s.Target, Node: s.Node, DependsOn: s.DependsOn, Reason: s.Reason,
		Estimate: pools.Estimate(s.Estimate),
		Lane:     ptr(s.Lane, Lane.pools), From: pools.Residency(s.From), Route: ptr(s.Route, Route.pools),
		Prefetch: ptr(s.Prefetch, Prefetch.pools), Member: ptr(s.Member, Member.pools)}
}

// FromFleet is the JSON form of a fleet.
func FromFleet(f pools.Fleet) Fleet {
	return Fleet{Nodes: each(f.Nodes, func(n pools.NodeState) Node { return Node{Name: n.Name, Down: n.Down} }),
		Lanes: each(f.Lanes, fromLane), Routes: each(f.Routes, fromRoute),
		Prefetched: each(f.Prefetched, fromPrefetch), Members: each(f.Members, fromMember)}
}

func (f Fleet) pools() pools.Fleet {
	return pools.Fleet{Nodes: each(f.Nodes, func(n Node) pools.NodeState { return pools.NodeState{Name: n.Name, Down: n.Down} }),
		Lanes: each(f.Lanes, Lane.pools), Routes: each(f.Routes, Route.pools),
		Prefetched: each(f.Prefetched, Prefetch.pools), Members: each(f.Members, Member.pools)}
}

func fromLane(l pools.LaneState) Lane {
	return Lane{Name: l.Name, Node: l.Node, Model: l.Model, Port: l.Port, Residency: string(l.Residency),
		Path: l.Path, SHA256: l.SHA256, Source: l.Source, Args: l.Args, Aliases: l.Aliases, MemoryGB: l.MemoryGB, Loaded: l.Loaded}
}

func (l Lane) pools() pools.LaneState {
	return pools.LaneState{Name: l.Name, Node: l.Node, Model: l.Model, Port: l.Port, Residency: pools.Residency(l.Residency),
		Path: l.Path, SHA256: l.SHA256, Source: l.Source, Args: l.Args, Aliases: l.Aliases, MemoryGB: l.MemoryGB, Loaded: l.Loaded}
}

func fromRoute(r pools.Route) Route {
	return Route{Alias: r.Alias, Lane: r.Lane, Node: r.Node, Port: r.Port, Router: r.Router}
}

func (r Route) pools() pools.Route {
	return pools.Route{Alias: r.Alias, Lane: r.Lane, Node: r.Node, Port: r.Port, Router: r.Router}
}

func fromPrefetch(p pools.Prefetch) Prefetch {
	return Prefetch{Node: p.Node, Model: p.Model, Path: p.Path, SHA256: p.SHA256, SizeGB: p.SizeGB}
}

func (p Prefetch) pools() pools.Prefetch {
	return pools.Prefetch{Node: p.Node, Model: p.Model, Path: p.Path, SHA256: p.SHA256, SizeGB: p.SizeGB}
}

func fromMember(m pools.MemberState) Member {
	return Member{PodPool: m.PodPool, Context: m.Context, Priority: m.Priority, SSHHost: m.SSHHost, SSHPort: m.SSHPort,
		Capacity: m.Capacity, Registry: m.Registry, Image: m.Image, PodMemoryGB: m.PodMemoryGB}
}

func (m Member) pools() pools.MemberState {
	return pools.MemberState{PodPool: m.PodPool, Context: m.Context, Priority: m.Priority, SSHHost: m.SSHHost, SSHPort: m.SSHPort,
		Capacity: m.Capacity, Registry: m.Registry, Image: m.Image, PodMemoryGB: m.PodMemoryGB}
}

// each converts every element of a list; nil stays nil, so that a list
// the plan leaves out stays out.
func each[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// ptr converts what p points to, or gives nil.
func ptr[A, B any](p *A, f func(A) B) *B {
	if p == nil {
		return nil
	}
	v := f(*p)
	return &v
}
