package planjson

import (
	"encoding/json"
	"fmt"

	"poolc.dev/poolc/pools"
)

// SavedPlan is a saved plan file: the plan with what it was made from, so
// that apply can refuse it when the configuration or the state changed
// since (see compiler.CheckSavedPlan).
//
//	format_version  3 (pools.SavedPlanFormatVersion); 2 is read (spare ports
//	                were chosen pool-wide then), 1 is refused
//	poolc_version   the poolc that planned
//	config_hash     sha256 of the configuration files, config_files their paths
//	state_lineage   the state planned against, "none" for no state file
//	state_serial    its serial
//	state_hash      sha256 of its fleet (pools.State.ContentHash)
//	assume_down     nodes plan --assume-down treated as down
//	plan            the Plan
type SavedPlan struct {
	FormatVersion int      `json:"format_version"`
	PoolcVersion  string   `json:"poolc_version"`
	ConfigHash    string   `json:"config_hash"`
	ConfigFiles   []string `json:"config_files"`
	StateLineage  string   `json:"state_lineage"`
	StateSerial   int64    `json:"state_serial"`
	StateHash     string   `json:"state_hash"`
	AssumeDown    []string `json:"assume_down,omitempty"`
	Plan          *Plan    `json:"plan"`
}

// FromSaved is the file form of a saved plan.
func FromSaved(s *pools.SavedPlan) SavedPlan {
	out := SavedPlan{FormatVersion: s.FormatVersion, PoolcVersion: s.PoolcVersion, ConfigHash: s.ConfigHash, ConfigFiles: s.ConfigFiles,
		StateLineage: s.StateLineage, StateSerial: s.StateSerial, StateHash: s.StateHash, AssumeDown: s.AssumeDown}
	if s.Plan != nil {
		p := FromPlan(s.Plan)
		out.Plan = &p
	}
	return out
}

// MarshalSaved writes a saved plan as its file: indented JSON ending in a
// newline.
func MarshalSaved(s *pools.SavedPlan) ([]byte, error) {
	data, err := json.MarshalIndent(FromSaved(s), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// ParseSaved reads a saved plan file. It refuses a file of a newer format
// version, reports a syntax error with its line and column, refuses a
// file of the old format (which did not bind the plan to the state's
// content), and refuses a plan no poolc would write (pools.Plan.Check),
// so that commands can trust its shape.
func ParseSaved(name string, data []byte) (*pools.SavedPlan, error) {
	var saved SavedPlan
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("%s is not a saved plan (poolc plan --out writes one, in JSON): %w", name, pools.JSONError(name, data, err))
	}
	switch {
	case saved.FormatVersion > pools.SavedPlanFormatVersion:
		return nil, fmt.Errorf("%s: saved plan format_version %d is newer than this poolc reads (%d): upgrade poolc", name, saved.FormatVersion, pools.SavedPlanFormatVersion)
	case saved.FormatVersion < 1 || saved.Plan == nil:
		return nil, fmt.Errorf("%s is not a saved plan: no format_version or plan", name)
	}
	out := &pools.SavedPlan{FormatVersion: saved.FormatVersion, PoolcVersion: saved.PoolcVersion, ConfigHash: saved.ConfigHash,
		ConfigFiles: saved.ConfigFiles, StateLineage: saved.StateLineage, StateSerial: saved.StateSerial, StateHash: saved.StateHash,
		AssumeDown: saved.AssumeDown, Plan: saved.Plan.Pools()}
	if err := out.Plan.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if saved.FormatVersion < pools.SavedPlanBoundToState || saved.StateHash == "" || saved.StateLineage == "" {
		return nil, fmt.Errorf("%s: saved plan format_version %d does not bind the plan to the state it was made from: plan again", name, saved.FormatVersion)
	}
	return out, nil
}
