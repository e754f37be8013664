package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
	"poolc.dev/poolc/runner/schedule"
)

// executed carries out a plan in a quiet world with the controller in
// mode auto (whose ticks plan nothing here: the plan's steps change what
// it does not manage), and returns the execution and the timeline.
func executed(t *testing.T, steps []pools.Step, prepare func(w *world)) (*execution, *Result) {
	t.Helper()
	p := onePool(nil)
	p.Nodes = append(p.Nodes, pools.Node{Name: "far", MemoryGB: 64, Guard: p.Guard})
	w := newWorld(p, Scenario{Duration: 2 * time.Hour}.withDefaults(), Options{Mode: ModeAuto})
	if prepare != nil {
		prepare(w)
	}
	for i := range steps {
		if steps[i].DependsOn == nil {
			steps[i].DependsOn = []string{}
		}
	}
	x, err := w.exec.execute(&pools.Plan{Pool: p.Name, Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.run(); err != nil {
		t.Fatal(err)
	}
	if !x.done {
		t.Fatal("the execution did not end")
	}
	return x, w.result()
}

// prefetch is a step copying gb of weights named model to node.
func prefetch(node, model string, gb float64, deps ...string) pools.Step {
	return pools.Step{ID: "prefetch:" + model + "@" + node, Kind: pools.StepPrefetch, Node: node, DependsOn: deps,
		Prefetch: &pools.Prefetch{Node: node, Model: model, SizeGB: gb}}
}

// doneAt returns when each step the timeline says was done was done.
func doneAt(r *Result) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, a := range actions(r, "step") {
		out[a.Detail] = a.At
	}
	return out
}

// At most the runner's parallelism of steps are in flight at once, and
// the rest start as slots free, in plan order.
func TestTheSimulatorKeepsTheRunnersParallelism(t *testing.T) {
	var steps []pools.Step
	for i := range 25 {
		steps = append(steps, prefetch("n", fmt.Sprintf("m%02d", i), 10)) // 10 s each at 1 GB/s
	}
	x, r := executed(t, steps, nil)
	at := doneAt(r)
	par := runner.DefaultParallelism
	for i, s := range steps {
		want := time.Duration(i/par+1) * 10 * time.Second
		if at[s.ID] != want || x.m.Result(i).Outcome != schedule.Done {
			t.Errorf("%s done at %s (%s); want at %s, its slot's turn", s.ID, at[s.ID], x.m.Result(i).Outcome, want)
		}
	}
}

// A step that fails skips what depends on it, directly or not, while an
// independent branch goes on.
func TestTheSimulatorSkipsTheDependentsOfAFailedStep(t *testing.T) {
	lane := pools.LaneState{Name: "big", Node: "n", Model: "big", Residency: pools.KeepWarm, MemoryGB: 20, Port: 9100}
	steps := []pools.Step{
		prefetch("n", "big", 10),
		{ID: "start:big@n", Kind: pools.StepStart, Node: "n", Lane: &lane, DependsOn: []string{"prefetch:big@n"}},
		{ID: "route:big", Kind: pools.StepRoute, Route: &pools.Route{Alias: "big", Lane: "big", Node: "n"}, DependsOn: []string{"start:big@n"}},
		prefetch("far", "other", 5),
	}
	x, r := executed(t, steps, func(w *world) { w.faults.fillDisk(w.fleet.nodeIdx["n"], 0) })
	want := []schedule.Outcome{schedule.Failed, schedule.Skipped, schedule.Skipped, schedule.Done}
	for i, o := range want {
		if res := x.m.Result(i); res.Outcome != o || (o == schedule.Skipped && res.Attempts != 0) {
			t.Errorf("%s: %s after %d attempts; want %s", steps[i].ID, res.Outcome, res.Attempts, o)
		}
	}
	if _, ok := lane2(r, "big"); ok {
		t.Error("the lane of a skipped start runs")
	}
	if failed := actions(r, "step-failed"); len(failed) != 1 || failed[0].At != 0 {
		t.Errorf("failures: %v; want the prefetch's, at once (the disk is full)", failed)
	}
}

func lane2(r *Result, name string) (pools.LaneState, bool) {
	i := slices.IndexFunc(r.Final.Lanes, func(l pools.LaneState) bool { return l.Name == name })
	if i < 0 {
		return pools.LaneState{}, false
	}
	return r.Final.Lanes[i], true
}

// A node that does not answer fails a step retryably: it is tried again
// after the runner's backoff, doubling, at most its retries; a node that
// answers again before the last retry takes the step.
func TestTheSimulatorRetriesAsTheRunnerDoes(t *testing.T) {
	for _, c := range []struct {
		partition time.Duration
		attempts  int
		outcome   schedule.Outcome
	}{
		{partition: time.Hour, attempts: 1 + runner.DefaultRetries, outcome: schedule.Failed},
		{partition: 2 * time.Second, attempts: 3, outcome: schedule.Done}, // retries at 1 s and 3 s
	} {
		x, r := executed(t, []pools.Step{prefetch("far", "m", 4)}, func(w *world) { w.faults.partition(w.fleet.nodeIdx["far"], c.partition) })
		res := x.m.Result(0)
		if res.Attempts != c.attempts || res.Outcome != c.outcome {
			t.Errorf("partitioned for %s: %s after %d attempts; want %s after %d", c.partition, res.Outcome, res.Attempts, c.outcome, c.attempts)
		}
		var at []time.Duration
		for _, a := range actions(r, "step-retry") {
			at = append(at, a.At)
		}
		// Each retry waits Backoff·2^(n-1) after the failure before it.
		var want []time.Duration
		next := time.Duration(0)
		for n := 1; n < c.attempts; n++ {
			want = append(want, next)
			next += runner.DefaultBackoff << (n - 1)
		}
		if !slices.Equal(at, want) {
			t.Errorf("partitioned for %s: retries decided at %v; want %v", c.partition, at, want)
		}
	}
}

// An attempt still running after the step timeout ends timed out and is
// not retried (the sim marks no timeout retryable), so its dependents are
// skipped; its work goes on, as on hardware: the weights land.
func TestTheSimulatorTimesOutAStepAsTheRunnerDoes(t *testing.T) {
	lane := pools.LaneState{Name: "slow", Node: "far", Model: "slow", Residency: pools.KeepWarm, MemoryGB: 8, Port: 9100}
	steps := []pools.Step{
		prefetch("far", "slow", 1200), // 20 minutes at 1 GB/s
		{ID: "start:slow@far", Kind: pools.StepStart, Node: "far", Lane: &lane, DependsOn: []string{"prefetch:slow@far"}},
	}
	x, r := executed(t, steps, nil)
	if res := x.m.Result(0); res.Outcome != schedule.Failed || res.Attempts != 1 {
		t.Errorf("the slow prefetch: %s after %d attempts; want failed after 1", res.Outcome, res.Attempts)
	}
	if res := x.m.Result(1); res.Outcome != schedule.Skipped {
		t.Errorf("its start: %s; want skipped", res.Outcome)
	}
	failed := actions(r, "step-failed")
	if len(failed) != 1 || failed[0].At != runner.DefaultStepTimeout {
		t.Errorf("failures: %v; want the prefetch's, timed out at %s", failed, runner.DefaultStepTimeout)
	}
	if !slices.ContainsFunc(r.Final.Prefetched, func(p pools.Prefetch) bool { return p.Model == "slow" }) {
		t.Error("the timed-out prefetch's weights never landed")
	}
}

// Cancelling (a later plan preempts) starts nothing more: steps not
// begun are cancelled, those waiting out a backoff too, and the steps in
// flight finish.
func TestTheSimulatorCancelsAsTheRunnerDoes(t *testing.T) {
	p := onePool(nil)
	p.Nodes = append(p.Nodes, pools.Node{Name: "far", MemoryGB: 64, Guard: p.Guard})
	w := newWorld(p, Scenario{Duration: time.Hour}.withDefaults(), Options{Mode: ModeAuto})
	w.faults.partition(w.fleet.nodeIdx["far"], time.Hour)
	steps := []pools.Step{
		prefetch("n", "a", 10),
		prefetch("n", "b", 10, "prefetch:a@n"),
		prefetch("far", "c", 10), // fails, retryably, and waits to be tried again
	}
	x, err := w.exec.execute(&pools.Plan{Pool: p.Name, Steps: steps})
	if err != nil {
		t.Fatal(err)
	}
	for len(w.queue) > 0 && w.queue[0].at <= 5*time.Second {
		e, _ := w.next()
		if err := w.handle(e); err != nil {
			t.Fatal(err)
		}
	}
	w.exec.cancel(x)
	if err := w.run(); err != nil {
		t.Fatal(err)
	}
	want := []schedule.Outcome{schedule.Done, schedule.Cancelled, schedule.Cancelled}
	for i, o := range want {
		if got := x.m.Result(i).Outcome; got != o {
			t.Errorf("%s: %s; want %s", steps[i].ID, got, o)
		}
	}
	if !x.done {
		t.Error("the cancelled execution did not end")
	}
	if len(x.failed) != 0 {
		t.Errorf("failed: %v; a cancelled step is not a failure", x.failed)
	}
}
