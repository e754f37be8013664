package compiler_test

import (
	"strings"
	"testing"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/compiler/planjson"
	"poolc.dev/poolc/pools"
)

// sparkLabFromNoState is examples/spark-lab, an empty state and the plan
// from it.
func sparkLabFromNoState(t *testing.T) (*compiler.Config, *pools.State, *pools.Plan) {
	t.Helper()
	cfg, diags := compiler.Load([]string{"../examples/spark-lab"})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	empty := &pools.State{}
	empty.Normalize()
	p, err := compiler.Plan(cfg, empty, compiler.PlanOptions{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, empty, p
}

// TestCheckSavedPlanRefusesEveryEdit plans spark-lab from no state, saves
// it through JSON as poolc plan --out does, and sees the plan accepted as
// saved and refused after each edit, naming the step and field.
func TestCheckSavedPlanRefusesEveryEdit(t *testing.T) {
	cfg, empty, p := sparkLabFromNoState(t)
	data, err := planjson.MarshalSaved(&pools.SavedPlan{FormatVersion: pools.SavedPlanFormatVersion, ConfigHash: cfg.Hash,
		StateLineage: pools.LineageOf(empty), StateHash: empty.ContentHash(), Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	load := func() *pools.SavedPlan {
		saved, err := planjson.ParseSaved("plan.json", data)
		if err != nil {
			t.Fatal(err)
		}
		return saved
	}
	if err := compiler.CheckSavedPlan(cfg, empty, load()); err != nil {
		t.Fatalf("the plan as saved: %v", err)
	}
	first := func(s *pools.SavedPlan, kind pools.StepKind) *pools.Step {
		for i := range s.Plan.Steps {
			if s.Plan.Steps[i].Kind == kind {
				return &s.Plan.Steps[i]
			}
		}
		t.Fatalf("no %s step", kind)
		return nil
	}
	for _, c := range []struct {
		name, want string
		edit       func(*pools.SavedPlan, *pools.State)
	}{
		{"model path", "lane.path", func(s *pools.SavedPlan, _ *pools.State) { first(s, pools.StepStart).Lane.Path = "/tmp/x.gguf" }},
		{"args", "lane.args", func(s *pools.SavedPlan, _ *pools.State) { first(s, pools.StepStart).Lane.Args = []string{"--x"} }},
		{"port", "lane.port", func(s *pools.SavedPlan, _ *pools.State) { first(s, pools.StepStart).Lane.Port++ }},
		{"node", "node", func(s *pools.SavedPlan, _ *pools.State) { first(s, pools.StepStart).Node = "elsewhere" }},
		{"kind", "kind", func(s *pools.SavedPlan, _ *pools.State) { first(s, pools.StepStart).Kind = pools.StepStop }},
		{"depends", "depends_on", func(s *pools.SavedPlan, _ *pools.State) { first(s, pools.StepStart).DependsOn = nil }},
		{"route", "route.lane", func(s *pools.SavedPlan, _ *pools.State) { first(s, pools.StepRoute).Route.Lane = pools.Cloud }},
		{"extra step", "is not a step poolc plans", func(s *pools.SavedPlan, _ *pools.State) {
			s.Plan.Steps = append(s.Plan.Steps, s.Plan.Steps[0])
		}},
		{"assume down", "not the plan of its configuration", func(s *pools.SavedPlan, _ *pools.State) { s.AssumeDown = []string{cfg.Pool.Nodes[0].Name} }},
		{"config", "configuration", func(s *pools.SavedPlan, _ *pools.State) { s.ConfigHash = "0" }},
		{"a state appeared", "lineage", func(_ *pools.SavedPlan, st *pools.State) { st.Lineage = "new" }},
		{"empty state with content", "state changed since it was planned", func(_ *pools.SavedPlan, st *pools.State) {
			st.Nodes = []pools.NodeState{{Name: cfg.Pool.Nodes[0].Name, Down: true}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			saved, st := load(), &pools.State{}
			st.Normalize()
			c.edit(saved, st)
			err := compiler.CheckSavedPlan(cfg, st, saved)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
		})
	}
}

// TestCheckSavedPlanOfSparePortsPoolWide: a plan saved before spare ports
// were chosen per node (format_version 2) still applies when it is the
// plan poolc makes now; one whose lane's second process is on another
// port is refused as stale, saying why.
func TestCheckSavedPlanOfSparePortsPoolWide(t *testing.T) {
	cfg, empty, p := sparkLabFromNoState(t)
	saved := func() *pools.SavedPlan {
		data, err := planjson.MarshalSaved(&pools.SavedPlan{FormatVersion: 2, PoolcVersion: "0.9.0", ConfigHash: cfg.Hash,
			StateLineage: pools.LineageOf(empty), StateHash: empty.ContentHash(), Plan: p})
		if err != nil {
			t.Fatal(err)
		}
		s, err := planjson.ParseSaved("plan.json", data)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := compiler.CheckSavedPlan(cfg, empty, saved()); err != nil {
		t.Fatalf("a format_version 2 plan that poolc plans again the same: %v", err)
	}
	old := saved()
	for i := range old.Plan.Steps {
		if s := &old.Plan.Steps[i]; s.Kind == pools.StepStart {
			s.Lane.Port++
			break
		}
	}
	err := compiler.CheckSavedPlan(cfg, empty, old)
	if want := "saved plan is stale: poolc 0.9.0 saved it (format_version 2) choosing spare ports pool-wide"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one with %q", err, want)
	}
}
