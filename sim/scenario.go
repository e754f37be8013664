// Package sim is the fleet simulator: a discrete-event model of a pool's
// machines, gateway and controller, deterministic for a seed, that runs
// the real placer, planner and controller, and the runner's scheduling
// state machine (runner/schedule) carrying plans out, in virtual time, and
// measures what operators care about: SLO, requests sent
// to the cloud, cold waits, GB reloaded, interruptions, residency churn
// and guard aborts.
package sim

import "time"

// Scenario is one simulation: a timeline of faults, demand changes and
// operator actions against a pool, with the SLO it is judged by. Scenario
// files (CUE or HCL, schema/scenario.cue) decode into it; zero fields take
// the defaults documented on each.
type Scenario struct {
	Name        string
	Description string
	// Duration is the simulated time; default 24h.
	Duration time.Duration
	// Seed makes a run repeatable; default 1. --seed overrides it.
	Seed uint64

	// Demand is the request load, per alias.
	Demand []Demand
	// ModelServiceSeconds is the mean time a model takes to serve a
	// request, for the models it names; a request served by a lane of
	// another model takes its demand's ServiceSeconds.
	ModelServiceSeconds map[string]float64
	// Events are the timeline, in any order (sorted by At when run).
	Events []Event

	// SLO judges each request.
	SLO SLO
	// Gateway is how requests are admitted and where they wait.
	Gateway Gateway
	// Lease is the membership lease: how the controller learns a node died.
	Lease Lease
	// Controller tunes the controller (modes advise and auto).
	Controller ControllerSettings
	// Links are the bandwidths weights are prefetched at.
	Links Links
	// StepTimeout is the runner's time limit of one attempt of a step, as
	// `poolc apply --step-timeout` sets it; default
	// runner.DefaultStepTimeout. (Not yet in the scenario file schema.)
	StepTimeout time.Duration
}

// Demand is the request arrivals of one alias: Poisson at RatePerMinute,
// shaped over the day, with bursts.
type Demand struct {
	Alias string
	// RatePerMinute is the mean arrival rate at the shape's peak.
	RatePerMinute float64
	// Shape is "flat" (default) or "daily": a day curve low at night,
	// high in working hours.
	Shape string
	// ServiceSeconds is the mean time a lane takes to serve one request;
	// default 2.
	ServiceSeconds float64
	// Bursts multiply the rate for a while.
	Bursts []Burst
}

// Burst multiplies an alias's arrival rate by Factor from At for Duration.
type Burst struct {
	At       time.Duration
	Duration time.Duration
	Factor   float64
}

// EventKind names a timeline event.
type EventKind string

// The timeline events: faults, and what operators do.
const (
	// Crash stops Node at once: its lanes are gone, it answers nothing,
	// and its lease lapses after Lease.TTL. A crash at 0 means the node
	// is down from the start.
	Crash EventKind = "crash"
	// Recover brings a crashed or hung Node back, empty.
	Recover EventKind = "recover"
	// Hang leaves Node up but not answering (requests to it time out,
	// heartbeats stop) for Duration, or until Recover.
	Hang EventKind = "hang"
	// Partition cuts Node off the network for Duration: its lanes keep
	// running, but requests and heartbeats do not get through.
	Partition EventKind = "partition"
	// Cordon makes an operator cordon Node.
	Cordon EventKind = "cordon"
	// Uncordon makes an operator lift Node's cordon.
	Uncordon EventKind = "uncordon"
	// SwitchProfile makes Profile the active profile.
	SwitchProfile EventKind = "profile"
	// ChangeConfig applies the configuration at Config (a path relative
	// to the scenario file) from then on.
	ChangeConfig EventKind = "config"
	// StartLane is an operator starting Lane by hand (on Node, or
	// wherever it runs when Node is empty), clearing a guard latch.
	StartLane EventKind = "start-lane"
	// DiskFull makes Node refuse prefetches from then on (Duration 0:
	// until the end).
	DiskFull EventKind = "disk-full"
)

// Event is one thing that happens at a time.
type Event struct {
	At       time.Duration
	Kind     EventKind
	Node     string
	Profile  string
	Config   string
	Lane     string
	Duration time.Duration
}

// SLO says when a request counts as served well: locally, after waiting
// at most WaitSeconds (default 10) for its lane.
type SLO struct {
	WaitSeconds float64
}

// Gateway is the admission model.
type Gateway struct {
	// WaitLimitSeconds is how long a request waits for a cold lane before
	// it goes to the alias's cloud fallback (if it has one); default 30.
	WaitLimitSeconds float64
	// RequestTimeoutSeconds is how long a request may wait, from its
	// arrival, before it is served: past that the gateway gives up on it,
	// and it goes to the alias's cloud fallback or fails; default 600.
	RequestTimeoutSeconds float64
}

// Lease is the membership lease of every node.
type Lease struct {
	// HeartbeatSeconds is the heartbeat interval; default 10.
	HeartbeatSeconds float64
	// TTLSeconds is how long a lease lives without a heartbeat; default 90.
	TTLSeconds float64
}

// ControllerSettings tune the controller. Zero values take the defaults.
type ControllerSettings struct {
	// TickSeconds is how often the controller looks; default 30.
	TickSeconds float64
	// StableTicks is how many ticks a non-urgent plan must stay the same
	// before it is applied; default 3.
	StableTicks int
	// ResidencyStableTicks is the same for changes of a residency;
	// default 20.
	ResidencyStableTicks int
	// MinGainGB is the least memory-weighted gain a non-urgent change
	// must bring; default 1.
	MinGainGB float64
	// CooldownSeconds is the least time between two non-urgent applies;
	// default 600.
	CooldownSeconds float64
	// LoadBudgetGBPerHour caps the GB a non-urgent change may load per
	// hour; default 200.
	LoadBudgetGBPerHour float64
	// BackoffSeconds is the first wait after a failed start; it doubles
	// each time; default 60.
	BackoffSeconds float64
	// PromotePerMinute is the request rate, averaged over the demand
	// window, at which an on-demand lane is held warm; default 2.
	// DemotePerMinute is the rate below which it is let go; default 0.5,
	// and at most PromotePerMinute.
	PromotePerMinute, DemotePerMinute float64
	// DemandWindowSeconds is how far back rates are averaged, in whole
	// minutes; default 900.
	DemandWindowSeconds float64
}

// Links are the prefetch bandwidths.
type Links struct {
	// DefaultGBps is every node's link; default 1.
	DefaultGBps float64
	// PerNode overrides it for some nodes.
	PerNode map[string]float64
}
