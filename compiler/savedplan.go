package compiler

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"poolc.dev/poolc/pools"
)

// CheckSavedPlan refuses a saved plan that is not exactly the plan poolc
// makes now from cfg and current: made from other files, against another
// state (lineage, serial or content; a plan made with no state file is
// bound to "no state" and its fleet), or with any step added, removed,
// reordered or changed. It plans again, with the saved plan's clock and
// --assume-down nodes, and compares step by step, naming the first step
// and field that differ, so a hand-edited plan never reaches a plugin.
// current is the state as the plugins observe it now, so a plan whose
// steps are already done is refused too.
func CheckSavedPlan(cfg *Config, current *pools.State, saved *pools.SavedPlan) error {
	if saved.ConfigHash != cfg.Hash {
		return fmt.Errorf("saved plan is stale: the configuration (%s) changed since it was planned; plan again", strings.Join(cfg.Files, ", "))
	}
	if lineage := pools.LineageOf(current); saved.StateLineage != lineage || saved.StateSerial != current.Serial {
		return fmt.Errorf("saved plan is stale: it was planned against state serial %d (lineage %s), the state is now serial %d (lineage %s); plan again",
			saved.StateSerial, saved.StateLineage, current.Serial, lineage)
	}
	again, err := Plan(cfg, current, PlanOptions{AssumeDown: saved.AssumeDown, Now: saved.Plan.PlannedAt})
	if err != nil {
		return fmt.Errorf("saved plan cannot be planned again: %w", err)
	}
	if err := sameSteps(saved.Plan.Steps, again.Steps); err != nil {
		if saved.StateHash != current.ContentHash() {
			return fmt.Errorf("saved plan is stale: the fleet is no longer the one it was planned against (the state file or what the plugins observe changed): %w; plan again", err)
		}
		if err := olderSparePorts(saved); err != nil {
			return err
		}
		return fmt.Errorf("saved plan is not the plan of its configuration and state: %w", err)
	}
	if saved.StateHash != current.ContentHash() {
		return fmt.Errorf("saved plan is stale: the content of the state changed since it was planned; plan again")
	}
	if !jsonEqual(saved.Plan, again) {
		if err := olderSparePorts(saved); err != nil {
			return err
		}
		return fmt.Errorf("saved plan is not the plan of its configuration and state: its fleets, interruptions or unplaced lanes differ")
	}
	return nil
}

// olderSparePorts refuses, as stale, a saved plan that differs from the
// plan poolc makes now and was made before spare ports were chosen per
// node: its lanes' second processes were on ports searched pool-wide.
func olderSparePorts(saved *pools.SavedPlan) error {
	if saved.FormatVersion >= pools.SavedPlanSparePortsPerNode {
		return nil
	}
	return fmt.Errorf("saved plan is stale: poolc %s saved it (format_version %d) choosing spare ports pool-wide, and this poolc chooses them per node, so a lane replaced on its node may start on another port; plan again",
		cmp.Or(saved.PoolcVersion, "(unknown version)"), saved.FormatVersion)
}

// sameSteps reports the first step of saved that is not the step of
// planned at its place, or a step one list has and the other lacks.
func sameSteps(saved, planned []pools.Step) error {
	for i := range max(len(saved), len(planned)) {
		switch {
		case i >= len(planned):
			return fmt.Errorf("step %d (%s) is not a step poolc plans", i+1, saved[i].ID)
		case i >= len(saved):
			return fmt.Errorf("it lacks step %d (%s) that poolc plans", i+1, planned[i].ID)
		}
		if field := stepDifference(&saved[i], &planned[i]); field != "" {
			return fmt.Errorf("step %d (%s) differs in its %s from the step poolc plans (%s)", i+1, saved[i].ID, field, planned[i].ID)
		}
	}
	return nil
}

// stepDifference names the first field in which two steps differ, or
// returns "".
func stepDifference(a, b *pools.Step) string {
	fields := []struct {
		name string
		of   func(*pools.Step) any
	}{
		{"id", func(s *pools.Step) any { return s.ID }},
		{"kind", func(s *pools.Step) any { return s.Kind }},
		{"target", func(s *pools.Step) any { return s.Target }},
		{"node", func(s *pools.Step) any { return s.Node }},
		{"depends_on", func(s *pools.Step) any { return s.DependsOn }},
		{"lane", func(s *pools.Step) any { return s.Lane }},
		{"from", func(s *pools.Step) any { return s.From }},
		{"route", func(s *pools.Step) any { return s.Route }},
		{"prefetch", func(s *pools.Step) any { return s.Prefetch }},
		{"member", func(s *pools.Step) any { return s.Member }},
		{"estimate", func(s *pools.Step) any { return s.Estimate }},
		{"reason", func(s *pools.Step) any { return s.Reason }},
	}
	for _, f := range fields {
		if va, vb := f.of(a), f.of(b); !jsonEqual(va, vb) {
			if sub := fieldDifference(va, vb); sub != "" {
				return f.name + "." + sub
			}
			return f.name
		}
	}
	return ""
}

// fieldDifference names, by its JSON name, the first field in which two
// pointers to structs of one type differ, or returns "".
func fieldDifference(a, b any) string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() != reflect.Pointer || va.IsNil() || vb.IsNil() || va.Elem().Kind() != reflect.Struct {
		return ""
	}
	va, vb = va.Elem(), vb.Elem()
	for i := range va.NumField() {
		if !jsonEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return ""
}

// jsonEqual reports whether two values have the same JSON form, which is
// how a saved plan holds them.
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
