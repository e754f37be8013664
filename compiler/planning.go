package compiler

import (
	"fmt"
	"path/filepath"
	"time"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/compiler/plan"
	"poolc.dev/poolc/pools"
)

// StatePath is where a configuration keeps its state: its state block's
// path, relative to the directory of its first file.
func (c *Config) StatePath() string {
	p := c.Pool.State.Path
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Dir(), p)
}

// Dir is the directory of the configuration's first file, against which
// relative paths in it are resolved.
func (c *Config) Dir() string { return filepath.Dir(c.Files[0]) }

// PlanOptions are the what-if assumptions of a plan.
type PlanOptions struct {
	// AssumeDown lists nodes to treat as down beside those the state
	// knows to be down.
	AssumeDown []string
	// Now stamps the plan.
	Now time.Time
}

// Plan places the configuration's lanes, with the nodes the current state
// knows to be down, and diffs the result against that state. A target the
// refresh could not observe stops it (*UnobservedError), unless it is a
// node down by its membership or by opt.AssumeDown: the plan then places
// the lanes recorded there elsewhere and sends nothing to the node
// (Plan.TakenDown).
func Plan(cfg *Config, current *pools.State, opt PlanOptions) (*pools.Plan, error) {
	for _, n := range opt.AssumeDown {
		if cfg.Pool.Node(n) == nil {
			return nil, fmt.Errorf("--assume-down %s: no such node in pool %s", n, cfg.Pool.Name)
		}
	}
	taken, unreached, err := settle(current, opt.AssumeDown)
	if err != nil {
		return nil, err
	}
	down, cordon := map[string]bool{}, map[string]pools.Cordon{}
	for _, n := range current.Nodes {
		if n.Down {
			down[n.Name] = true
		}
		if n.Cordon != "" {
			cordon[n.Name] = n.Cordon
		}
	}
	for _, n := range opt.AssumeDown {
		down[n] = true
	}
	running := func(lane, node string) bool { return current.Lane(lane, node) != nil }
	placed := place.Place(place.Input{Pool: cfg.Pool, Down: down, Cordon: cordon, Running: running})
	p, err := plan.Diff(plan.Input{Pool: cfg.Pool, Placement: placed, Current: current.Fleet, Unreached: unreached, Now: opt.Now})
	if p != nil {
		p.TakenDown = taken
	}
	return p, err
}

// Desired is the fleet a configuration wants with every node up: the
// current state of a code review's base.
func Desired(cfg *Config) *pools.State {
	st := &pools.State{FormatVersion: pools.StateFormatVersion, Pool: cfg.Pool.Name}
	st.Fleet = place.Place(place.Input{Pool: cfg.Pool}).Desired
	return st
}

// Leaving lists the members the current state holds that the
// configuration no longer lists: the plan removes them, so their cluster
// plugins must observe them.
func Leaving(cfg *Config, current *pools.State) []pools.MemberState {
	return plan.Leaving(pools.Fleet{Members: place.Members(cfg.Pool)}, current.Fleet)
}
