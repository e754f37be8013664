package sim

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
)

// withDefaults returns the scenario with every zero field set to the
// default its documentation gives, and its events sorted by time (events
// at the same time keep their order).
func (sc Scenario) withDefaults() Scenario {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	if sc.Duration == 0 {
		sc.Duration = 24 * time.Hour
	}
	if sc.Seed == 0 {
		sc.Seed = 1
	}
	sc.Demand = slices.Clone(sc.Demand)
	for i := range sc.Demand {
		def(&sc.Demand[i].ServiceSeconds, 2)
		if sc.Demand[i].Shape == "" {
			sc.Demand[i].Shape = "flat"
		}
	}
	sc.Events = slices.Clone(sc.Events)
	slices.SortStableFunc(sc.Events, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
	def(&sc.SLO.WaitSeconds, 10)
	def(&sc.Gateway.WaitLimitSeconds, 30)
	def(&sc.Gateway.RequestTimeoutSeconds, 600)
	def(&sc.Lease.HeartbeatSeconds, 10)
	def(&sc.Lease.TTLSeconds, 90)
	c := &sc.Controller
	def(&c.TickSeconds, 30)
	if c.StableTicks == 0 {
		c.StableTicks = 3
	}
	if c.ResidencyStableTicks == 0 {
		c.ResidencyStableTicks = 20
	}
	def(&c.MinGainGB, 1)
	def(&c.CooldownSeconds, 600)
	def(&c.LoadBudgetGBPerHour, 200)
	def(&c.BackoffSeconds, 60)
	def(&c.PromotePerMinute, 2)
	def(&c.DemotePerMinute, 0.5)
	def(&c.DemandWindowSeconds, 900)
	def(&sc.Links.DefaultGBps, 1)
	if sc.StepTimeout == 0 {
		sc.StepTimeout = runner.DefaultStepTimeout
	}
	return sc
}

// check refuses a scenario that cannot run against the pool: negative
// times and rates, unknown aliases, nodes, lanes and profiles, shapes
// other than flat and daily, and config changes without a loader.
func (sc Scenario) check(p *pools.Pool, opt Options) error {
	if sc.Duration < 0 {
		return fmt.Errorf("scenario %s: duration %s is negative", sc.Name, sc.Duration)
	}
	if sc.StepTimeout < 0 {
		return fmt.Errorf("scenario %s: step timeout %s is negative", sc.Name, sc.StepTimeout)
	}
	aliases := map[string]bool{}
	for _, a := range p.Aliases {
		aliases[a.Name] = true
	}
	for _, d := range sc.Demand {
		switch {
		case !aliases[d.Alias] && !opt.AllowAbsent:
			return fmt.Errorf("scenario %s: demand for alias %q, which pool %s does not declare", sc.Name, d.Alias, p.Name)
		case d.RatePerMinute < 0 || d.ServiceSeconds < 0:
			return fmt.Errorf("scenario %s: demand for alias %s has a negative rate or service time", sc.Name, d.Alias)
		case d.Shape != "flat" && d.Shape != "daily":
			return fmt.Errorf("scenario %s: demand for alias %s has shape %q; want flat or daily", sc.Name, d.Alias, d.Shape)
		}
		for _, b := range d.Bursts {
			if b.At < 0 || b.Duration < 0 || b.Factor < 0 {
				return fmt.Errorf("scenario %s: a burst of alias %s has a negative time or factor", sc.Name, d.Alias)
			}
		}
	}
	changed := false // names after a config change are checked when they happen
	for _, e := range sc.Events {
		if err := sc.checkEvent(p, e, opt, changed); err != nil {
			return fmt.Errorf("scenario %s: %s event at %s: %w", sc.Name, e.Kind, e.At, err)
		}
		changed = changed || e.Kind == ChangeConfig
	}
	if c := sc.Controller; c.DemotePerMinute > c.PromotePerMinute {
		return fmt.Errorf("scenario %s: the controller's demote_per_minute (%v; 0.5 unless set) exceeds its promote_per_minute (%v)", sc.Name, c.DemotePerMinute, c.PromotePerMinute)
	}
	if l := sc.Lease; l.TTLSeconds <= l.HeartbeatSeconds {
		return fmt.Errorf("scenario %s: a lease of %v s lapses before the next heartbeat (every %v s)", sc.Name, l.TTLSeconds, l.HeartbeatSeconds)
	}
	if c := sc.Controller; c.DemandWindowSeconds < 60 {
		return fmt.Errorf("scenario %s: the controller's demand_window_seconds (%v) is under a minute", sc.Name, c.DemandWindowSeconds)
	}
	for m, s := range sc.ModelServiceSeconds {
		if s <= 0 {
			return fmt.Errorf("scenario %s: model %s's service time must be positive", sc.Name, m)
		}
	}
	for _, gbps := range sc.Links.PerNode {
		if gbps <= 0 {
			return fmt.Errorf("scenario %s: link bandwidths must be positive", sc.Name)
		}
	}
	return nil
}

func (sc Scenario) checkEvent(p *pools.Pool, e Event, opt Options, changed bool) error {
	if e.At < 0 || e.Duration < 0 {
		return fmt.Errorf("negative time")
	}
	var node, lane, profile string // names the event needs
	switch e.Kind {
	case Crash, Recover, Hang, Partition, Cordon, Uncordon, DiskFull:
		node = e.Node
		if node == "" {
			return fmt.Errorf("it names no node")
		}
	case SwitchProfile:
		profile = e.Profile
		if profile == "" {
			return fmt.Errorf("it names no profile")
		}
	case ChangeConfig:
		if opt.LoadConfig == nil {
			return fmt.Errorf("config %q: no configuration loader was given", e.Config)
		}
	case StartLane:
		lane, node = e.Lane, e.Node
		if lane == "" {
			return fmt.Errorf("it names no lane")
		}
	default:
		return fmt.Errorf("unknown event kind")
	}
	switch {
	case changed || opt.AllowAbsent:
		return nil
	case node != "" && p.Node(node) == nil:
		return fmt.Errorf("pool %s has no node %q", p.Name, node)
	case lane != "" && p.Lane(lane) == nil:
		return fmt.Errorf("pool %s has no lane %q", p.Name, lane)
	case profile != "" && p.Profile(profile) == nil:
		return fmt.Errorf("pool %s has no profile %q", p.Name, profile)
	}
	return nil
}
