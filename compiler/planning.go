package compiler

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/compiler/plan"
	"poolc.dev/poolc/pools"
)

// PlanRequest says what to plan: the configuration, where the current
// state comes from, and what-if assumptions.
type PlanRequest struct {
	// Paths are the configuration's files or directories.
	Paths []string
	// StatePath is the state file; "" means the configuration's own
	// (state { path = ... }, relative to its first file's directory).
	StatePath string
	// BasePaths, when set, plan from the configuration at BasePaths to the
	// one at Paths instead of from the state: code review mode.
	BasePaths []string
	// AssumeDown lists nodes to treat as down, for a what-if.
	AssumeDown []string
	// Now stamps the plan.
	Now time.Time
}

// PlanOutcome is a plan with what it was made from.
type PlanOutcome struct {
	Config *Config
	State  *pools.State
	// StatePath is where the state was read from ("" in code review mode).
	StatePath string
	Plan      *pools.Plan
}

// Plan loads the configuration and the current state, places the lanes
// and diffs. Configuration findings come back as diagnostics; a state
// that cannot be read or a plan that cannot be ordered as an error.
func Plan(req PlanRequest) (*PlanOutcome, pools.Diagnostics, error) {
	cfg, diags := Load(req.Paths)
	if diags.HasErrors() {
		return nil, diags, nil
	}
	out := &PlanOutcome{Config: cfg}
	var current pools.Fleet
	down := map[string]bool{}
	if req.BasePaths != nil {
		base, bd := Load(req.BasePaths)
		if bd.HasErrors() {
			for i := range bd {
				bd[i].Message = "base configuration: " + bd[i].Message
			}
			return nil, append(diags, bd...), nil
		}
		current = place.Place(place.Input{Pool: base.Pool}).Desired
		out.State = &pools.State{Pool: base.Pool.Name}
	} else {
		out.StatePath = req.StatePath
		if out.StatePath == "" {
			out.StatePath = filepath.Join(filepath.Dir(cfg.Files[0]), cfg.Pool.State.Path)
		}
		st, err := ReadState(out.StatePath)
		if err != nil {
			return nil, diags, err
		}
		out.State = st
		current = st.Fleet
		for _, n := range st.Nodes {
			if n.Down {
				down[n.Name] = true
			}
		}
	}
	for _, n := range req.AssumeDown {
		if cfg.Pool.Node(n) == nil {
			return nil, diags, fmt.Errorf("--assume-down %s: no such node in pool %s", n, cfg.Pool.Name)
		}
		down[n] = true
	}
	placed := place.Place(place.Input{Pool: cfg.Pool, Down: down})
	p, err := plan.Diff(plan.Input{Pool: cfg.Pool, Placement: placed, Current: current, Now: req.Now})
	if err != nil {
		return nil, diags, err
	}
	out.Plan = p
	return out, diags, nil
}

// ReadState reads a state file; a file that does not exist is an empty
// state, the start of a bring-up.
func ReadState(path string) (*pools.State, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		st := &pools.State{FormatVersion: pools.StateFormatVersion}
		st.Normalize()
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	return pools.ParseState(path, data)
}
