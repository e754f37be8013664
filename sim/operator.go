package sim

import (
	"fmt"
	"slices"

	"poolc.dev/poolc/pools"
)

// operatorProfile is the profile that carries operator cordons and the
// lanes demand holds warm in a pool that declares no profiles.
const operatorProfile = "operator"

// scenarioEvent carries out the i-th event of the scenario's timeline.
func (w *world) scenarioEvent(i int32) error {
	e := w.sc.Events[i]
	n := int32(-1)
	if e.Kind != ChangeConfig && e.Kind != SwitchProfile && e.Kind != StartLane {
		var ok bool
		if n, ok = w.fleet.nodeIdx[e.Node]; !ok {
			if w.opt.AllowAbsent {
				w.stats.note(w.now, "absent", fmt.Sprintf("%s event: pool %s has no node %q", e.Kind, w.cfg.Name, e.Node))
				return nil
			}
			return fmt.Errorf("%s event at %s: no node %q", e.Kind, e.At, e.Node)
		}
	}
	switch e.Kind {
	case Crash:
		w.stats.note(w.now, "node-crash", e.Node)
		w.faults.crash(n)
	case Recover:
		w.stats.note(w.now, "node-recover", e.Node)
		w.faults.recover(n)
	case Hang:
		w.stats.note(w.now, "node-hang", faultDetail(e))
		w.faults.hang(n, e.Duration)
	case Partition:
		w.stats.note(w.now, "node-partition", faultDetail(e))
		w.faults.partition(n, e.Duration)
	case DiskFull:
		w.stats.note(w.now, "disk-full", faultDetail(e))
		w.faults.fillDisk(n, e.Duration)
	case Cordon, Uncordon:
		w.stats.note(w.now, string(e.Kind), e.Node)
		w.cordons = slices.DeleteFunc(w.cordons, func(c string) bool { return c == e.Node })
		if e.Kind == Cordon {
			w.cordons = append(w.cordons, e.Node)
			slices.Sort(w.cordons)
		}
		w.cfgVer++
	case SwitchProfile:
		if w.cfg.Profile(e.Profile) == nil {
			if w.opt.AllowAbsent {
				w.stats.note(w.now, "absent", fmt.Sprintf("profile event: pool %s has no profile %q", w.cfg.Name, e.Profile))
				return nil
			}
			return fmt.Errorf("profile event at %s: pool %s has no profile %q", e.At, w.cfg.Name, e.Profile)
		}
		w.stats.note(w.now, "profile", e.Profile)
		w.profile = e.Profile
		w.cfgVer++
	case ChangeConfig:
		return w.changeConfig(e)
	case StartLane:
		return w.startLane(e)
	}
	return nil
}

// changeConfig puts a new configuration in force; its new nodes join the
// fleet, up, and the others take its memory and guard.
func (w *world) changeConfig(e Event) error {
	p, err := w.opt.LoadConfig(e.Config)
	if err != nil {
		return fmt.Errorf("config event at %s: %w", e.At, err)
	}
	w.stats.note(w.now, "config", e.Config)
	w.cfg = p
	if w.profile != "" && p.Profile(w.profile) == nil {
		w.profile = ""
	}
	w.fleet.learnSizes(p)
	for _, n := range p.Nodes {
		if i, ok := w.fleet.nodeIdx[n.Name]; ok {
			w.fleet.nodes[i].budget = n.Budget()
		} else {
			w.addNode(n, false)
		}
	}
	w.cfgVer++
	return nil
}

// startLane is an operator starting a lane by hand: it clears the guard's
// latch of the lane's processes (on Node, when given) and loads them.
func (w *world) startLane(e Event) error {
	if w.opt.AllowAbsent && w.cfg.Lane(e.Lane) == nil {
		w.stats.note(w.now, "absent", fmt.Sprintf("%s event: pool %s has no lane %q", e.Kind, w.cfg.Name, e.Lane))
		return nil
	}
	started := 0
	for _, i := range w.fleet.byLane[e.Lane] {
		in := &w.fleet.insts[i]
		if !in.registered || (e.Node != "" && w.fleet.nodes[in.node].name != e.Node) {
			continue
		}
		started++
		in.latched = false
		w.fleet.version++
		w.fleet.admit(i)
	}
	detail := e.Lane
	if e.Node != "" {
		detail += " on " + e.Node
	}
	if started == 0 {
		detail += ": no such lane process runs"
	}
	w.stats.note(w.now, "start-lane", detail)
	return nil
}

// inForce is the configuration the controller plans with: the current
// configuration with the operator's profile and cordons applied, and the
// lanes demand holds warm (controller.Warm) running as preferred. Both
// join the active profile (a pool without profiles gets one, named
// "operator").
func (w *world) inForce(warm []string) *pools.Pool {
	p := *w.cfg
	if w.profile != "" {
		p.ActiveProfile = w.profile
	}
	if len(w.cordons) == 0 && len(warm) == 0 {
		return &p
	}
	p.Profiles = slices.Clone(p.Profiles)
	if p.Profile(p.ActiveProfile) == nil {
		p.ActiveProfile = operatorProfile
		i, _ := slices.BinarySearchFunc(p.Profiles, operatorProfile, func(pr pools.Profile, name string) int { return compareStrings(pr.Name, name) })
		p.Profiles = slices.Insert(p.Profiles, i, pools.Profile{Name: operatorProfile})
	}
	pr := p.Profile(p.ActiveProfile)
	pr.Cordon = slices.Clone(pr.Cordon)
	for _, c := range w.cordons {
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
