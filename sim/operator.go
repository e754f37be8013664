package sim

import (
	"cmp"
	"fmt"
	"slices"

	"poolc.dev/poolc/pools"
)

// operator is the configuration in force and the operator's changes to
// it: the scenario's events that are not faults of the hardware, and the
// faults it passes on.
type operator struct {
	*clock
	stats  *stats
	fleet  *fleet
	adm    *admission
	guard  *guard
	faults *faults
	// join adds a node the configuration names to the fleet, up.
	join func(n pools.Node, down bool)
	// cfg is the configuration in force; profile (when set) and cordons
	// are the operator's changes to it; cfgVer counts changes of the three.
	cfg     *pools.Pool
	profile string
	cordons []string
	cfgVer  uint64

	allowAbsent bool
	loadConfig  func(path string) (*pools.Pool, error)
}

// operatorProfile is the profile that carries operator cordons and the
// lanes demand holds warm in a pool that declares no profiles.
const operatorProfile = "operator"

// event carries out an event of the scenario's timeline.
func (o *operator) event(e Event) error {
	n := int32(-1)
	if e.Kind != ChangeConfig && e.Kind != SwitchProfile && e.Kind != StartLane {
		var ok bool
		if n, ok = o.fleet.nodeIdx[e.Node]; !ok {
			if o.allowAbsent {
				o.stats.note(o.now, "absent", fmt.Sprintf("%s event: pool %s has no node %q", e.Kind, o.cfg.Name, e.Node))
				return nil
			}
			return fmt.Errorf("%s event at %s: no node %q", e.Kind, e.At, e.Node)
		}
	}
	switch e.Kind {
	case Crash:
		o.stats.note(o.now, "node-crash", e.Node)
		o.faults.crash(n)
	case Recover:
		o.stats.note(o.now, "node-recover", e.Node)
		o.faults.recover(n)
	case Hang:
		o.stats.note(o.now, "node-hang", faultDetail(e))
		o.faults.hang(n, e.Duration)
	case Partition:
		o.stats.note(o.now, "node-partition", faultDetail(e))
		o.faults.partition(n, e.Duration)
	case DiskFull:
		o.stats.note(o.now, "disk-full", faultDetail(e))
		o.faults.fillDisk(n, e.Duration)
	case Cordon, Uncordon:
		o.stats.note(o.now, string(e.Kind), e.Node)
		o.cordons = slices.DeleteFunc(o.cordons, func(c string) bool { return c == e.Node })
		if e.Kind == Cordon {
			o.cordons = append(o.cordons, e.Node)
			slices.Sort(o.cordons)
		}
		o.cfgVer++
	case SwitchProfile:
		if o.cfg.Profile(e.Profile) == nil {
			if o.allowAbsent {
				o.stats.note(o.now, "absent", fmt.Sprintf("profile event: pool %s has no profile %q", o.cfg.Name, e.Profile))
				return nil
			}
			return fmt.Errorf("profile event at %s: pool %s has no profile %q", e.At, o.cfg.Name, e.Profile)
		}
		o.stats.note(o.now, "profile", e.Profile)
		o.profile = e.Profile
		o.cfgVer++
	case ChangeConfig:
		return o.changeConfig(e)
	case StartLane:
		return o.startLane(e)
	}
	return nil
}

// changeConfig puts a new configuration in force; its new nodes join the
// fleet, up, and the others take its memory and guard.
func (o *operator) changeConfig(e Event) error {
	p, err := o.loadConfig(e.Config)
	if err != nil {
		return fmt.Errorf("config event at %s: %w", e.At, err)
	}
	o.stats.note(o.now, "config", e.Config)
	o.cfg = p
	if o.profile != "" && p.Profile(o.profile) == nil {
		o.profile = ""
	}
	o.fleet.learnSizes(p)
	for _, n := range p.Nodes {
		if i, ok := o.fleet.nodeIdx[n.Name]; ok {
			o.adm.setBudget(i, n.Budget())
		} else {
			o.join(n, false)
		}
	}
	o.cfgVer++
	return nil
}

// changes counts the changes of the configuration in force: a new
// configuration, profile or cordon.
func (o *operator) changes() uint64 { return o.cfgVer }

// startLane is an operator starting a lane by hand: it clears the guard's
// latch of the lane's processes (on Node, when given) and loads them.
func (o *operator) startLane(e Event) error {
	if o.allowAbsent && o.cfg.Lane(e.Lane) == nil {
		o.stats.note(o.now, "absent", fmt.Sprintf("%s event: pool %s has no lane %q", e.Kind, o.cfg.Name, e.Lane))
		return nil
	}
	started := 0
	for _, i := range o.fleet.byLane[e.Lane] {
		in := &o.fleet.insts[i]
		if !in.registered || (e.Node != "" && o.fleet.nodes[in.node].name != e.Node) {
			continue
		}
		started++
		o.guard.unlatch(i)
		o.fleet.changed()
		o.adm.admit(i)
	}
	detail := e.Lane
	if e.Node != "" {
		detail += " on " + e.Node
	}
	if started == 0 {
		detail += ": no such lane process runs"
	}
	o.stats.note(o.now, "start-lane", detail)
	return nil
}

// inForce is the configuration the controller plans with: the current
// configuration with the operator's profile and cordons applied, and the
// lanes demand holds warm (controller.Warm) running as preferred. Both
// join the active profile (a pool without profiles gets one, named
// "operator").
func (o *operator) inForce(warm []string) *pools.Pool {
	p := *o.cfg
	if o.profile != "" {
		p.ActiveProfile = o.profile
	}
	if len(o.cordons) == 0 && len(warm) == 0 {
		return &p
	}
	p.Profiles = slices.Clone(p.Profiles)
	if p.Profile(p.ActiveProfile) == nil {
		p.ActiveProfile = operatorProfile
		i, _ := slices.BinarySearchFunc(p.Profiles, operatorProfile, func(pr pools.Profile, name string) int { return cmp.Compare(pr.Name, name) })
		p.Profiles = slices.Insert(p.Profiles, i, pools.Profile{Name: operatorProfile})
	}
	pr := p.Profile(p.ActiveProfile)
	pr.Cordon = slices.Clone(pr.Cordon)
	for _, c := range o.cordons {
		if !slices.Contains(pr.Cordon, c) {
			pr.Cordon = append(pr.Cordon, c)
		}
	}
	pr.Lanes = slices.Clone(pr.Lanes)
	for _, name := range warm {
		i := slices.IndexFunc(pr.Lanes, func(o pools.LaneOverride) bool { return o.Lane == name })
		if i < 0 {
			i = len(pr.Lanes)
			pr.Lanes = append(pr.Lanes, pools.LaneOverride{Lane: name})
		}
		pr.Lanes[i].Residency = pools.Preferred
	}
	return &p
}
