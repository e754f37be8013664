package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"poolc.dev/poolc/pools"
)

// laneSteps lays out the steps of the lanes' processes: the weights they
// need prefetched, a start where no process fits, a residency change in
// place, and the drain and stop of every other process.
type laneSteps struct {
	*draft
	why *reasons
}

func (ls *laneSteps) laneNames() []string {
	seen := map[string]bool{}
	var names []string
	for _, f := range []pools.Fleet{ls.cur, ls.des} {
		for _, l := range f.Lanes {
			if !seen[l.Name] {
				seen[l.Name] = true
				names = append(names, l.Name)
			}
		}
	}
	sort.Strings(names)
	return names
}

func (ls *laneSteps) prefetches() {
	serving := map[[2]string][]string{} // node, model -> desired lanes
	for _, l := range ls.des.Lanes {
		key := [2]string{l.Node, l.Model}
		serving[key] = append(serving[key], l.Name)
	}
	for _, p := range ls.des.Prefetched {
		if ls.cur.HasPrefetched(p) {
			continue
		}
		pf := p
		reason := fmt.Sprintf("because %s on %s", lanesText(serving[[2]string{p.Node, p.Model}]), p.Node)
		if m := ls.in.Pool.Model(p.Model); m != nil && m.Path != p.Path {
			reason += fmt.Sprintf("; staged at %s, since a running process loads %s", p.Path, m.Path)
		}
		ls.add(pools.Step{
			ID: prefetchID(p.Model, p.Node), Kind: pools.StepPrefetch,
			Target: p.Model, Node: p.Node, Prefetch: &pf,
			Reason:   reason,
			Estimate: pools.Estimate{Seconds: p.SizeGB / PrefetchGBps, TransferGB: p.SizeGB},
		})
	}
}

// lanesText names the lanes that need weights.
func lanesText(names []string) string {
	if len(names) == 1 {
		return "lane " + names[0] + " needs its weights"
	}
	return "lanes " + strings.Join(names, ", ") + " need their weights"
}

// lane lays out the steps of one lane: start the desired process where
// none fits, change residency in place, and drain and stop every other.
func (ls *laneSteps) lane(name string) {
	var d *pools.LaneState
	if i := ls.des.Instances(name); len(i) > 0 {
		d = &i[0]
	}
	var start *pools.Step
	var keep *pools.LaneState
	for _, c := range ls.cur.Instances(name) {
		if d != nil && c.Node == d.Node && c.Port == d.Port && sameRun(c, *d) && sameProcess(c, *d) {
			c := c
			keep = &c
		}
	}
	replaced := false
	var from pools.Residency // the residency a start across on-demand changes
	if d != nil {
		switch {
		case keep == nil:
			reason := ls.why.startReason(*d)
			for _, c := range ls.cur.Instances(name) {
				switch {
				case c.Node != d.Node:
				case c.Port == d.Port && sameProcess(c, *d):
					replaced = true
					reason = fmt.Sprintf("because lane %s changes in place: %s", name, processChange(c, *d))
				case c.Port == d.Port && sameRun(c, *d):
					reason, from = ls.why.crossReason(c, *d), c.Residency
				case !replaced:
					how := fmt.Sprintf("the new process starts beside the old one on port %d", d.Port)
					if ls.breakFirst[name] {
						how = fmt.Sprintf("the new process starts on port %d once the old one has stopped", d.Port)
					}
					reason = fmt.Sprintf("because lane %s on %s is replaced: %s; %s", name, d.Node, ls.why.replaceText(c, *d), how)
				}
			}
			start = ls.startStep(*d, reason)
			start.From = from
		case keep.Residency != d.Residency:
			from := keep.Residency
			up := d.Reserved() - keep.Reserved()
			if !keep.Loaded && d.Residency != pools.OnDemand {
				up = d.MemoryGB
			}
			s := ls.add(pools.Step{
				ID: ls.laneID(pools.StepResidency, *d), Kind: pools.StepResidency, Target: name, Node: d.Node,
				Lane: cloneLane(*d), From: from, Reason: ls.why.residencyReason(name, from, d.Residency),
				Estimate: pools.Estimate{Seconds: 1, MemoryGB: up},
			})
			if up > 0 {
				s.Estimate.Seconds = StartSeconds + ls.sizeOf(d.Model)/LoadGBps
			}
		case d.Residency != pools.OnDemand && !keep.Loaded:
			start = ls.startStep(*d, fmt.Sprintf("because lane %s is %s but not loaded", name, d.Residency))
		}
	}
	for _, c := range ls.cur.Instances(name) {
		// The kept process alone: a lane's own process and its model in
		// the node's router share node and port (an apply cut off
		// between the start across on-demand and the stop leaves both).
		if keep != nil && processOf(c) == processOf(*keep) || ls.in.Unreached[c.Node] {
			continue
		}
		ls.retire(c, d, start, replaced && c.Node == d.Node && c.Port == d.Port && sameProcess(c, *d))
	}
}

func cloneLane(l pools.LaneState) *pools.LaneState {
	l.Args = slices.Clone(l.Args)
	l.Aliases = slices.Clone(l.Aliases)
	return &l
}

func (ls *laneSteps) startStep(d pools.LaneState, reason string) *pools.Step {
	s := ls.add(pools.Step{
		ID: ls.laneID(pools.StepStart, d), Kind: pools.StepStart, Target: d.Name, Node: d.Node,
		Lane: cloneLane(d), Reason: reason,
		Estimate: pools.Estimate{Seconds: StartSeconds, MemoryGB: d.Reserved()},
	})
	if d.Residency != pools.OnDemand {
		s.Estimate.Seconds += ls.sizeOf(d.Model) / LoadGBps
	}
	if pf := ls.byID[prefetchID(d.Model, d.Node)]; pf != nil {
		dependOn(s, pf.ID)
	}
	return s
}

func prefetchID(model, node string) string { return fmt.Sprintf("prefetch:%s@%s", model, node) }

// retire drains and stops the process c of a lane whose desired process
// is d (nil when the lane goes away) started by start (nil when none is).
func (ls *laneSteps) retire(c pools.LaneState, d *pools.LaneState, start *pools.Step, inPlace bool) {
	ls.gone[processOf(c)] = true
	reason := ls.why.retireReason(c, d)
	drain := ls.add(pools.Step{
		ID: ls.laneID(pools.StepDrain, c), Kind: pools.StepDrain, Target: c.Name, Node: c.Node,
		Lane: cloneLane(c), Reason: reason, Estimate: pools.Estimate{Seconds: DrainSeconds},
	})
	stop := ls.add(pools.Step{
		ID: ls.laneID(pools.StepStop, c), Kind: pools.StepStop, Target: c.Name, Node: c.Node,
		Lane: cloneLane(c), Reason: reason, Estimate: pools.Estimate{Seconds: StopSeconds, MemoryGB: -c.Reserved()},
	})
	dependOn(stop, drain.ID)
	if start == nil {
		return
	}
	// Break first only with the new weights already in place.
	pf := ls.byID[prefetchID(start.Lane.Model, start.Lane.Node)]
	switch {
	case inPlace:
		// The new process takes the old one's place: it starts once the old is gone.
		dependOn(start, stop.ID)
		ls.breakFirst[c.Name] = true
		if pf != nil {
			dependOn(drain, pf.ID)
		}
	case ls.breakFirst[c.Name]:
		if pf != nil {
			dependOn(drain, pf.ID)
		}
	default:
		dependOn(drain, start.ID)
		ls.makeBeforeBreak[drain.ID] = c.Name
	}
}
