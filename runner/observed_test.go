package runner

import (
	"context"
	"strings"
	"testing"

	"poolc.dev/poolc/pools"
)

// A plugin that reports the step's target as it is afterwards: the state
// records what it saw, and a report that contradicts the step fails it,
// naming both.
func TestObservedResultsAreRecordedAndContradictionsFail(t *testing.T) {
	lane := pools.LaneState{Name: "chat", Node: "a", Model: "m", Port: 8080, Residency: pools.KeepWarm, MemoryGB: 30, Path: "/m.gguf"}
	start := pools.Step{ID: "start:chat@a", Kind: pools.StepStart, Lane: &lane}
	stop := pools.Step{ID: "stop:chat@a", Kind: pools.StepStop, Lane: &lane}
	route := pools.Step{ID: "route:chat", Kind: pools.StepRoute, Route: &pools.Route{Alias: "chat", Lane: "chat", Node: "a"}}
	member := pools.MemberState{PodPool: "jobs", Context: "k1", Capacity: 2, Image: "img:1"}
	sync := pools.Step{ID: "image-sync:jobs/k1", Kind: pools.StepImageSync, Member: &member}
	seenLane := lane
	seenLane.Args = []string{"--ctx-size", "8192"}
	otherPort := lane
	otherPort.Port = 9090
	digest := "img:1@sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name  string
		step  pools.Step
		seen  pools.Fleet
		fails string // "" for success
		check func(t *testing.T, st *pools.State)
	}{
		{name: "start seen running", step: start, seen: pools.Fleet{Lanes: []pools.LaneState{seenLane}},
			check: func(t *testing.T, st *pools.State) {
				if l := st.Lane("chat", "a"); l == nil || len(l.Args) != 2 {
					t.Errorf("state lane = %+v, want the observed one", l)
				}
			}},
		{name: "start not running", step: start, seen: pools.Fleet{}, fails: "lane chat is not running on a after the step, which was to start it"},
		{name: "start on another port", step: start, seen: pools.Fleet{Lanes: []pools.LaneState{otherPort}}, fails: "runs with port 9090 (the step wanted 8080)"},
		{name: "stop still running", step: stop, seen: pools.Fleet{Lanes: []pools.LaneState{lane}}, fails: "lane chat is still running on a after the step, which was to stop it"},
		{name: "stop seen gone", step: stop, seen: pools.Fleet{}},
		{name: "route elsewhere", step: route, seen: pools.Fleet{Routes: []pools.Route{{Alias: "chat", Lane: "cloud"}}}, fails: "alias chat routes to cloud after the step, which was to route it to chat@a"},
		{name: "image digest recorded", step: sync, seen: pools.Fleet{Members: []pools.MemberState{{PodPool: "jobs", Context: "k1", Image: digest}}},
			check: func(t *testing.T, st *pools.State) {
				if len(st.Members) != 1 || st.Members[0].Image != digest || st.Members[0].Capacity != 2 {
					t.Errorf("state members = %+v, want the digest the registry serves", st.Members)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{behave: func(string, int, context.Context) Response {
				seen := tc.seen.Clone()
				return Response{Observed: &seen}
			}}
			st := emptyState()
			if tc.step.Kind == pools.StepStop {
				st.Lanes = []pools.LaneState{lane}
			}
			res := Run(context.Background(), &pools.Plan{Steps: []pools.Step{tc.step}}, st, f, &memRecorder{}, Options{})
			got := res.Steps[0]
			switch {
			case tc.fails == "" && got.Outcome != Done:
				t.Fatalf("outcome %s: %v", got.Outcome, got.Diagnostics)
			case tc.fails != "" && (got.Outcome != Failed || !strings.Contains(summary(got.Diagnostics), tc.fails)):
				t.Fatalf("outcome %s: %q, want a failure saying %q", got.Outcome, summary(got.Diagnostics), tc.fails)
			case tc.fails != "" && tc.step.Kind == pools.StepStart && res.State.Lane("chat", "a") != nil:
				t.Error("a contradicted start was recorded in the state")
			}
			if tc.check != nil {
				tc.check(t, res.State)
			}
		})
	}
}
