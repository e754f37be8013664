// Package simactuator is the simulator actuator, the plugin named "sim" in
// pool files: it stands in for the hardware, handling every step kind
// against a fleet it keeps in a world file, in virtual time by default or
// in scaled real time. It checks what real hardware would punish — a lane
// started twice, an alias routed to a lane that is not running — and
// records such violations in the world, and it injects faults on request
// so tests can see failures, crashes and hangs.
//
// Configuration (the plugin's config block):
//
//	world          file the world is kept in, relative to the pool's
//	               directory (default ".poolc/sim-world.json", with its
//	               recent changes in a journal beside it: world.go;
//	               ":memory:" keeps it in the plugin process only)
//	time_scale     0 for virtual time (steps return at once), or the
//	               fraction of simulated seconds to really wait (0.01)
//	prefetch_gbps  simulated copy rate of weights (default 1)
//	load_gbps      simulated load rate of a model (default 2)
//	fail           step IDs (shell patterns) that fail
//	flaky          step IDs that fail, retryably, on their first attempt
//	crash          step IDs on which the plugin process exits (status 2)
//	hang           step IDs on which the plugin stops answering
//	unreachable    nodes the sim cannot reach: Observe reports them
//	               unobserved (cause unreachable) and steps there fail
package simactuator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"poolc.dev/poolc/plugins/convert"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
)

// Config is the sim's configuration block.
type Config struct {
	World        string   `json:"world"`
	TimeScale    float64  `json:"time_scale"`
	PrefetchGBps float64  `json:"prefetch_gbps"`
	LoadGBps     float64  `json:"load_gbps"`
	Fail         []string `json:"fail"`
	Flaky        []string `json:"flaky"`
	Crash        []string `json:"crash"`
	Hang         []string `json:"hang"`
	Unreachable  []string `json:"unreachable"`
}

// World is everything the sim knows: the fleet as the hardware has it,
// the virtual clock, how often each lane process was started, and the
// violations and interruptions it saw.
type World struct {
	Fleet         pools.Fleet    `json:"fleet"`
	ClockSeconds  float64        `json:"clock_seconds"`
	Starts        map[string]int `json:"starts"`
	Violations    []string       `json:"violations"`
	Interruptions []string       `json:"interruptions"`
	Attempts      map[string]int `json:"attempts"`
	// split holds the fleet split by node while steps apply (see
	// pools.ByNode), so that a step costs the same at any size of
	// fleet; while it is set, Fleet is out of date until settle.
	split *pools.ByNode
}

// byNode is the fleet split by node, split now if it is not yet.
func (w *World) byNode() *pools.ByNode {
	if w.split == nil {
		w.split = pools.SplitByNode(w.Fleet)
	}
	return w.split
}

// view is the fleet as a step sees it: its node's lanes and weights
// files, and every route and member. It is read only, and only until the
// next change.
func (w *World) view(step pools.Step) pools.Fleet {
	node := ""
	switch {
	case step.Lane != nil:
		node = step.Lane.Node
	case step.Prefetch != nil:
		node = step.Prefetch.Node
	case step.Route != nil:
		node = step.Route.Node
	}
	return w.byNode().Node(node)
}

// settle brings Fleet up to date with the steps applied since the split.
func (w *World) settle() {
	if w.split != nil {
		w.Fleet, w.split = w.split.Fleet(), nil
	}
}

// Sim is the simulator actuator.
type Sim struct {
	version string

	mu    sync.Mutex
	cfg   Config
	inv   sdk.Inventory
	nodes map[string]*sdk.Node // inv's nodes by name
	world World
	log   *worldLog // writes the world's changes (world.go)
}

var _ sdk.Actuator = (*Sim)(nil)

// New returns a simulator that reports the given version.
func New(version string) *Sim { return &Sim{version: version} }

// Describe names the sim and the step kinds it handles: all of them. It
// observes every part of its targets but their nodes, and reports each
// step's target as it is afterwards.
func (s *Sim) Describe(context.Context, sdk.DescribeRequest) sdk.DescribeResponse {
	return sdk.DescribeResponse{Name: "sim", Version: s.version, StepKinds: sdk.AllStepKinds(), ConfigSchema: ConfigSchema,
		Capabilities: sdk.Capabilities{
			Observes:      []string{sdk.ObserveLanes, sdk.ObserveRoutes, sdk.ObservePrefetched, sdk.ObserveMembers, sdk.ObserveImages},
			ApplyObserves: true,
		}}
}

// ConfigSchema is the CUE schema of the sim's config block.
const ConfigSchema = `{
	world?:         string
	time_scale?:    number & >=0
	prefetch_gbps?: number & >0
	load_gbps?:     number & >0
	fail?:  [...string]
	flaky?: [...string]
	crash?: [...string]
	hang?:  [...string]
	unreachable?: [...string]
}`

// Configure reads the configuration and loads the world.
func (s *Sim) Configure(_ context.Context, req sdk.ConfigureRequest) sdk.ConfigureResponse {
	cfg := Config{World: ".poolc/sim-world.json", PrefetchGBps: 1, LoadGBps: 2}
	if len(req.ConfigJSON) > 0 {
		dec := json.NewDecoder(bytes.NewReader(req.ConfigJSON))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			return sdk.ConfigureResponse{Diagnostics: sdk.Errorf(nil, "sim configuration: "+err.Error())}
		}
	}
	if cfg.TimeScale < 0 || cfg.PrefetchGBps <= 0 || cfg.LoadGBps <= 0 {
		return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"time_scale"}, "time_scale must be >= 0, prefetch_gbps and load_gbps > 0")}
	}
	for _, list := range [][]string{cfg.Fail, cfg.Flaky, cfg.Crash, cfg.Hang} {
		for _, p := range list {
			if _, err := path.Match(p, ""); err != nil {
				return sdk.ConfigureResponse{Diagnostics: sdk.Errorf(nil, fmt.Sprintf("bad step pattern %q: %v", p, err))}
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
	s.inv = req.Inventory
	s.nodes = convert.NodesByName(&s.inv)
	path := ""
	if cfg.World != ":memory:" {
		path = cfg.World
		if !filepath.IsAbs(path) {
			path = filepath.Join(req.WorkDir, path)
		}
	}
	w, log, err := OpenWorld(path)
	if err != nil {
		return sdk.ConfigureResponse{Diagnostics: sdk.Errorf([]string{"world"}, err.Error())}
	}
	s.log.Close()
	s.world, s.log = w, log
	return sdk.ConfigureResponse{}
}

// Observe returns the fleet of the sim's targets as its hardware has it:
// the lanes and weights on its nodes, the routes when it is the gateway,
// the members of its pod pools; a node configured unreachable is
// reported unobserved instead.
func (s *Sim) Observe(context.Context, sdk.ObserveRequest) sdk.ObserveResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.world.settle()
	f := s.mine(s.world.Fleet)
	var unobs []sdk.Unobserved
	for _, n := range s.cfg.Unreachable {
		if !s.runsOn(n) {
			continue
		}
		f.Lanes = slices.DeleteFunc(f.Lanes, func(l pools.LaneState) bool { return l.Node == n })
		f.Prefetched = slices.DeleteFunc(f.Prefetched, func(p pools.Prefetch) bool { return p.Node == n })
		unobs = append(unobs, sdk.Unobserved{Kind: sdk.TargetNode, Name: n, Cause: sdk.CauseUnreachable, Detail: "sim: node " + n + " is unreachable, as configured"})
	}
	out := convert.SDKFleet(f, s.nodes)
	out.Unobserved = unobs
	return sdk.ObserveResponse{Fleet: out}
}

// everything says that the sim was configured without an inventory, as
// the simulator runs it in process: it then serves every target.
func (s *Sim) everything() bool {
	return len(s.inv.Nodes) == 0 && !s.inv.Gateway && len(s.inv.Members) == 0 && len(s.inv.Leaving) == 0
}

// runsOn reports whether the node is one of the sim's.
func (s *Sim) runsOn(node string) bool { return s.everything() || s.nodes[node] != nil }

// mine is the part of f that belongs to the sim's targets.
func (s *Sim) mine(f pools.Fleet) pools.Fleet {
	if s.everything() {
		return f.Clone()
	}
	onMine := s.runsOn
	member := map[string]bool{}
	// Members leaving the pool are still the sim's until removed.
	for _, m := range append(slices.Clone(s.inv.Members), s.inv.Leaving...) {
		member[m.PodPool+"/"+m.Context] = true
	}
	var out pools.Fleet
	for _, l := range f.Lanes {
		if onMine(l.Node) {
			out.Lanes = append(out.Lanes, l)
		}
	}
	for _, p := range f.Prefetched {
		if onMine(p.Node) {
			out.Prefetched = append(out.Prefetched, p)
		}
	}
	if s.inv.Gateway {
		out.Routes = slices.Clone(f.Routes)
	}
	for _, m := range f.Members {
		if member[m.Key()] {
			out.Members = append(out.Members, m)
		}
	}
	return out
}

func matches(patterns []string, id string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, id); ok {
			return true
		}
	}
	return false
}

// Apply carries out one step in the simulated fleet and reports the
// step's target as the fleet then has it.
func (s *Sim) Apply(ctx context.Context, req sdk.ApplyRequest, progress sdk.ProgressFunc) sdk.ApplyResponse {
	r := s.ApplyStep(ctx, convert.PoolsStep(req.Step), convert.SDKProgress(progress))
	out := sdk.ApplyResponse{Retryable: r.Retryable, Diagnostics: convert.SDKDiagnostics(r.Diagnostics)}
	if r.Observed != nil {
		f := convert.SDKFleet(*r.Observed, s.nodes)
		out.Observed = &f
	}
	return out
}

// ApplyStep is Apply in poolc's terms, for the simulator, which runs the
// sim actuator in its own process.
func (s *Sim) ApplyStep(ctx context.Context, step pools.Step, progress pools.ProgressFunc) runner.Response {
	s.mu.Lock()
	cfg := s.cfg
	s.record(change{Attempt: step.ID})
	attempt := s.world.Attempts[step.ID]
	s.mu.Unlock()
	switch {
	case matches(cfg.Crash, step.ID):
		fmt.Fprintf(os.Stderr, "sim: crashing on %s as configured\n", step.ID)
		os.Exit(2)
	case matches(cfg.Hang, step.ID):
		select {} // stop answering, as a wedged plugin does
	case matches(cfg.Fail, step.ID):
		return runner.Response{Diagnostics: pools.StepFailure("injected failure of " + step.ID)}
	case matches(cfg.Flaky, step.ID) && attempt == 1:
		return runner.Response{Retryable: true, Diagnostics: pools.StepFailure("injected transient failure of " + step.ID)}
	case step.Node != "" && slices.Contains(cfg.Unreachable, step.Node):
		return runner.Response{Retryable: true, Diagnostics: pools.StepFailure("sim: node " + step.Node + " is unreachable, as configured")}
	}
	seconds := s.duration(step)
	progress(pools.Progress{Message: fmt.Sprintf("%s: %s simulated seconds", step.Kind, pools.Num(seconds)), Fraction: 0})
	if cfg.TimeScale > 0 {
		select {
		case <-ctx.Done():
			return runner.Response{Diagnostics: pools.StepFailure(step.ID + " cancelled: " + ctx.Err().Error())}
		case <-time.After(time.Duration(seconds * cfg.TimeScale * float64(time.Second))):
		}
	}
	s.mu.Lock()
	diags := s.check(step)
	if !diags.HasErrors() {
		if err := s.record(change{Effect: &step, Seconds: seconds}); err != nil {
			diags = pools.StepFailure(err.Error())
		}
	}
	v := s.world.view(step)
	seen := after(&v, step)
	s.mu.Unlock()
	if err := s.commit(); err != nil {
		return runner.Response{Retryable: true, Diagnostics: append(diags, pools.StepFailure("saving the sim world: "+err.Error())...)}
	}
	if diags.HasErrors() {
		return runner.Response{Diagnostics: diags}
	}
	return runner.Response{Observed: &seen}
}

// check refuses what hardware would: starting a running lane process or
// one on a port another process of the node listens on, copying weights
// over a file a running process has mapped with other weights, routing
// to or draining a lane that is not running (a lane on one of its own
// nodes: another plugin's lanes are not in its world). Stopping a lane an
// alias still routes to is allowed (a plan may interrupt with
// --allow-interruption) but recorded. The caller holds s.mu.
func (s *Sim) check(step pools.Step) pools.Diagnostics {
	v := s.world.view(step)
	f := &v
	violate := func(msg string) pools.Diagnostics {
		s.record(change{Violation: msg})
		return pools.StepFailure(msg)
	}
	switch step.Kind {
	case pools.StepStart:
		l := step.Lane
		if f.ProcessAs(*l) != nil {
			return violate(fmt.Sprintf("lane %s is already running on %s port %d: a second start would run it twice", l.Name, l.Node, l.Port))
		}
		for _, o := range f.Lanes {
			// The router serves an on-demand lane beside the lane's own process.
			if o.Node == l.Node && o.Port == l.Port && !(o.Name == l.Name && (o.Residency == pools.OnDemand) != (l.Residency == pools.OnDemand)) {
				return violate(fmt.Sprintf("lane %s cannot start on %s port %d: lane %s listens there", l.Name, l.Node, l.Port, o.Name))
			}
		}
	case pools.StepPrefetch:
		p := step.Prefetch
		for _, o := range f.Lanes {
			if o.Node == p.Node && o.Path == p.Path && !pools.SameWeights(o, pools.LaneState{SHA256: p.SHA256}) {
				return violate(fmt.Sprintf("weights %s on %s are mapped by lane %s on port %d (sha256 %s): copying %s over them would change what it serves",
					p.Path, p.Node, o.Name, o.Port, o.SHA256, p.SHA256))
			}
		}
	case pools.StepRoute:
		r := step.Route
		if r.Lane != "" && r.Lane != pools.Cloud && s.runsOn(r.Node) && f.Serves(*r) == nil {
			return violate(fmt.Sprintf("alias %s cannot route to %s@%s: it is not running", r.Alias, r.Lane, r.Node))
		}
	case pools.StepDrain, pools.StepResidency:
		if stepLane(f, step) == nil {
			return violate(fmt.Sprintf("%s of %s@%s, which is not running", step.Kind, step.Lane.Name, step.Lane.Node))
		}
	case pools.StepStop:
		// A route reaches one of the lane's processes: across on-demand,
		// its router's model or its own process.
		for _, r := range f.Routes {
			if r.Reaches(*step.Lane) {
				s.record(change{Interruption: fmt.Sprintf("alias %s routed to %s@%s while it stopped", r.Alias, r.Lane, r.Node)})
			}
		}
	}
	return nil
}

// duration is how many simulated seconds a step takes.
func (s *Sim) duration(step pools.Step) float64 {
	switch step.Kind {
	case pools.StepPrefetch:
		return step.Prefetch.SizeGB / s.cfg.PrefetchGBps
	case pools.StepStart:
		if step.Lane.Residency == pools.OnDemand {
			return 2
		}
		return 2 + step.Lane.MemoryGB/s.cfg.LoadGBps
	case pools.StepDrain:
		return 10
	}
	return step.Estimate.Seconds
}

// stepLane is the process a lane step is about: as its lane says, its own
// process or its router's model; a residency step's, whichever runs.
func stepLane(f *pools.Fleet, step pools.Step) *pools.LaneState {
	if step.Kind == pools.StepResidency {
		return f.Process(step.Lane.Name, step.Lane.Node, step.Lane.Port)
	}
	return f.ProcessAs(*step.Lane)
}

// after is the step's target as the fleet has it: the lane (none after a
// stop), the route, the weights file or the member.
func after(f *pools.Fleet, step pools.Step) pools.Fleet {
	var out pools.Fleet
	switch {
	case step.Lane != nil:
		if l := stepLane(f, step); l != nil {
			out.Lanes = []pools.LaneState{*l}
		}
	case step.Route != nil:
		if r := f.Route(step.Route.Alias); r != nil {
			out.Routes = []pools.Route{*r}
		}
	case step.Prefetch != nil:
		if f.HasPrefetched(*step.Prefetch) {
			out.Prefetched = []pools.Prefetch{*step.Prefetch}
		}
	case step.Member != nil:
		for _, m := range f.Members {
			if m.Key() == step.Member.Key() {
				out.Members = []pools.MemberState{m}
			}
		}
	}
	return out
}
