package sim

import (
	"fmt"
	"time"

	"poolc.dev/poolc/pools"
)

// Mode is how the controller takes part in a run.
type Mode string

// The modes.
const (
	// ModeOff runs no controller: the gateway admits requests on the
	// routes the fleet starts with, and nothing is ever planned.
	ModeOff Mode = "off"
	// ModeAdvise plans every tick and records (Timeline "plan-advised")
	// the plans auto would apply, changing nothing.
	ModeAdvise Mode = "advise"
	// ModeAuto carries those plans out in the model, as the runner's
	// schedule decides.
	ModeAuto Mode = "auto"
)

// Options shape one run.
type Options struct {
	// Mode is the controller's mode; "" means ModeOff.
	Mode Mode
	// Seed overrides the scenario's seed when not 0.
	Seed uint64
	// Progress, when set, hears how much simulated time has run, about
	// every percent.
	Progress func(done, total time.Duration)
	// LoadConfig loads the configuration a ChangeConfig event names.
	LoadConfig func(path string) (*pools.Pool, error)
	// AllowAbsent lets the scenario name aliases, nodes, lanes and
	// profiles the pool lacks, as when one scenario compares two
	// configurations and only one of them has the name: demand for an
	// absent alias arrives and fails (Metrics.AbsentAlias, and an
	// "absent" timeline entry); an event naming an absent node, lane or
	// profile is noted as "absent" and changes nothing.
	AllowAbsent bool
}

// Result is what a run measured and what happened in it.
type Result struct {
	Metrics Metrics `json:"metrics"`
	// Timeline is the controller's actions and the notable events, in
	// time order.
	Timeline []Action `json:"timeline"`
	// Events is how many simulation events were processed.
	Events int `json:"events"`
	// Final is the fleet at the end as the hardware has it: the lane
	// processes (Loaded says whether each is in memory), the gateway's
	// routes, the weights on each node, and which nodes are down.
	Final pools.Fleet `json:"final"`
}

// Metrics are what operators judge a run by. A request ends one way:
// served by a local lane, sent to the cloud, or failed.
type Metrics struct {
	// Requests is every request that arrived.
	Requests int `json:"requests"`
	// Served were served by a local lane; ServedWithinSLO of them waited
	// at most SLO.WaitSeconds from arrival to service.
	Served          int `json:"served"`
	ServedWithinSLO int `json:"served_within_slo"`
	// ToCloud went to the alias's cloud fallback.
	ToCloud int `json:"to_cloud"`
	// Failed found no lane and no cloud, or were cut off.
	Failed int `json:"failed"`
	// SLOPercent is ServedWithinSLO as a percentage of Requests.
	SLOPercent float64 `json:"slo_percent"`
	// ColdWaits counts requests that waited for their lane to load, and
	// ColdWaitP95Seconds is the 95th percentile of those waits (each the
	// whole time a request waited at loading lanes, until it was served
	// or left for the cloud).
	ColdWaits          int     `json:"cold_waits"`
	ColdWaitP95Seconds float64 `json:"cold_wait_p95_seconds"`
	// GBReloaded is the weights loaded after the start that no plan asked
	// for: the gateway's loads on demand and the restores of a node that
	// recovers. GBLoadedByPlans is the weights the controller's plans loaded:
	// the lanes they started or upgraded (for an on-demand lane, its first
	// load). Every load after the start is in one of the two.
	GBReloaded      float64 `json:"gb_reloaded"`
	GBLoadedByPlans float64 `json:"gb_loaded_by_plans"`
	// Interruptions counts requests cut off in service: their node
	// crashed, hung or was cut off, or their lane stopped. (Requests only
	// queued there go on to the alias's next target.)
	Interruptions int `json:"interruptions"`
	// ResidencyChangesPerHour is the residency steps of the controller's
	// plans carried out, per simulated hour.
	ResidencyChangesPerHour float64 `json:"residency_changes_per_hour"`
	// Evictions counts the idle lanes the gateway unloaded to make room
	// for a load.
	Evictions int `json:"evictions"`
	// GuardAborts counts loads the memory guard aborted.
	GuardAborts int `json:"guard_aborts"`
	// Applies counts the plans the controller applied.
	Applies int `json:"applies"`
	// AbsentAlias counts the failed requests whose alias the configuration
	// in force did not declare (only with Options.AllowAbsent).
	AbsentAlias int `json:"absent_alias"`
}

// Action is one entry of the timeline: Kind is what happened, Detail
// says to what and why. The kinds:
//   - the scenario's events: "node-crash", "node-recover", "node-hang",
//     "node-partition", "disk-full", "cordon", "uncordon", "profile",
//     "config", "start-lane", and the ends of timed faults: "hang-end",
//     "partition-end", "disk-ok";
//   - the fleet: "guard-abort", and "replaced" (a node back from a crash
//     drops a lane the controller started elsewhere while it was away);
//   - the controller: "lease-expired" and "lease-renewed" (when a tick
//     sees them), "apply" (with the plan's summary and the reason),
//     "plan-advised", "preempt", "hold" (a plan held back, when the
//     reason changes; not for a plan still unstable or already
//     advised), "step" and "step-failed" (a step of an apply
//     carried out or failed, by ID), "step-retry" (an attempt failed
//     retryably and the step is tried again after the backoff),
//     "apply-done", "backoff";
//   - "absent": a name the scenario uses that the pool lacks
//     (Options.AllowAbsent).
type Action struct {
	At     time.Duration `json:"at"`
	Kind   string        `json:"kind"`
	Detail string        `json:"detail"`
}

// Run simulates the scenario against the pool and returns what it
// measured. The same pool, scenario and options give the same Result.
//
// The fleet starts as the pool placed with every node up (but those that
// crash at time 0), keep-warm and preferred lanes loaded, aliases routed
// as placed. Requests arrive per alias (demand.go) at a gateway modelled
// on llama-swap (gateway.go), whose admission keeps each node within its
// guard's budget by evicting idle lanes and aborts, latching the lane,
// only a load the keep-warm lanes leave no room for (admission.go).
// Faults (faults.go) cut off the requests at a node; recovered nodes
// restore their keep-warm lanes, and their preferred ones when idle room
// exists. The controller (loop.go, package controller) learns of a dead
// node only from its lapsed lease (lease.go); it plans from the fleet it
// observes (observe.go), in which a node that is down holds nothing, so
// the processes there are neither drained nor stopped; after a crash
// they come back with the node unless the controller started their lane
// elsewhere meanwhile. In mode auto its plans are carried out in virtual
// time by the runner's scheduling state machine, runner/schedule, under
// the runner's default policy (execute.go): its parallelism, its retries
// of what the hardware fails retryably (a node that does not answer) with
// their backoff, its step timeout (Scenario.StepTimeout), the skipping of
// a failed step's dependents and the cancelling of a preempted plan; the
// model says how long each step takes and how it ends (steps.go).
// Operator cordons join the active profile's (operator.go).
// Prefetches to one node do not share its link; each takes the link's
// full bandwidth.
func Run(pool *pools.Pool, sc Scenario, opt Options) (*Result, error) {
	switch opt.Mode {
	case "":
		opt.Mode = ModeOff
	case ModeOff, ModeAdvise, ModeAuto:
	default:
		return nil, fmt.Errorf("unknown controller mode %q: want off, advise or auto", opt.Mode)
	}
	sc = sc.withDefaults()
	if opt.Seed != 0 {
		sc.Seed = opt.Seed
	}
	if err := sc.check(pool, opt); err != nil {
		return nil, err
	}
	w := newWorld(pool, sc, opt)
	if err := w.run(); err != nil {
		return nil, err
	}
	return w.result(), nil
}
