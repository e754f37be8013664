package orchestrate_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/orchestrate"
	"poolc.dev/poolc/plugins/builtin"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/plugins/sdk"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/store"
)

// The plugins run out of process, as poolc runs them: the host starts
// this test binary again as "plugin-serve NAME", and it serves the
// built-in actuator NAME (the sim) instead of running the tests.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "plugin-serve" {
		impl, ok := builtin.New(os.Args[2], "test")
		if !ok {
			fmt.Fprintf(os.Stderr, "no built-in actuator %q\n", os.Args[2])
			os.Exit(1)
		}
		sdk.Serve(impl)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sparkLab copies the example pool (applied through the built-in sim,
// its world in the pool's directory) into a new directory and loads it.
func sparkLab(t *testing.T) *compiler.Config {
	t.Helper()
	src, err := os.ReadFile("../examples/spark-lab/spark-lab.hcl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spark-lab.hcl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := compiler.Load([]string{dir})
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	return cfg
}

// notices collects what an operation tells the operator.
type notices struct {
	mu  sync.Mutex
	got []string
}

func (n *notices) add(msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, msg)
}

func (n *notices) all() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.got, "\n")
}

var planTime = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func common(cfg *compiler.Config, n *notices) orchestrate.Common {
	c := orchestrate.Common{Config: cfg, Refresh: true, Lock: true, LockTimeout: 0,
		ObserveTimeout: 30 * time.Second, Operation: "apply", Version: "test", Now: planTime}
	if n != nil {
		c.Notice = n.add
	}
	return c
}

func stateFile(cfg *compiler.Config) *store.File {
	return store.Open(filepath.Join(cfg.Dir(), "poolc.state.json"))
}

// planSteps plans the pool as it is now and returns its steps.
func planSteps(t *testing.T, cfg *compiler.Config) []pools.Step {
	t.Helper()
	c := common(cfg, nil)
	c.Lock = false // a look, beside a lock a test holds
	resp, err := orchestrate.Plan(context.Background(), orchestrate.PlanRequest{Common: c})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Plan.Steps
}

func apply(t *testing.T, req orchestrate.ApplyRequest) *orchestrate.ApplyResponse {
	t.Helper()
	resp, err := orchestrate.Apply(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Result.OK() {
		t.Fatalf("the apply did not succeed: %s, %v", resp.Summary, resp.Result.WriteErr)
	}
	return resp
}

// nothingRan checks that the pool is as it was before an apply that must
// not have run: no state written, and the same plan as before.
func nothingRan(t *testing.T, cfg *compiler.Config, before []pools.Step) {
	t.Helper()
	if _, err := os.Stat(stateFile(cfg).Path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the state file was written: %v", err)
	}
	if after := planSteps(t, cfg); len(after) != len(before) {
		t.Errorf("the plan has %d steps now, %d before: steps ran", len(after), len(before))
	}
}

// An apply that finds the state locked by another operation refuses at
// once, naming the holder, and runs nothing.
func TestApplyRefusesALockedStateNamingItsHolder(t *testing.T) {
	cfg := sparkLab(t)
	before := planSteps(t, cfg)
	held, err := stateFile(cfg).Lock(context.Background(), store.NewLockInfo("apply", "other"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	holder, err := stateFile(cfg).LockInfo()
	if err != nil {
		t.Fatal(err)
	}

	_, err = orchestrate.Apply(context.Background(), orchestrate.ApplyRequest{Common: common(cfg, nil)})
	var locked *store.LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("apply of a locked state: %v, want a *store.LockedError", err)
	}
	if locked.Info.ID != holder.ID || locked.Info.Operation != "apply" {
		t.Errorf("the refusal names lock %+v, the holder is %+v", locked.Info, holder)
	}
	if !strings.Contains(err.Error(), holder.ID) || !strings.Contains(err.Error(), "force-unlock") {
		t.Errorf("the message does not say who holds the lock and how to break it: %v", err)
	}
	held.Unlock()
	nothingRan(t, cfg, before)
}

// With a lock timeout, an apply waits for the holder to let go and then
// runs; when the holder keeps the lock past the timeout, it gives up.
func TestApplyWaitsForTheLockUpToItsTimeout(t *testing.T) {
	cfg := sparkLab(t)
	before := planSteps(t, cfg)
	held, err := stateFile(cfg).Lock(context.Background(), store.NewLockInfo("apply", "other"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req := orchestrate.ApplyRequest{Common: common(cfg, nil)}
	req.LockTimeout = 200 * time.Millisecond
	begin := time.Now()
	_, err = orchestrate.Apply(context.Background(), req)
	var locked *store.LockedError
	if !errors.As(err, &locked) {
		t.Fatalf("apply past its lock timeout: %v, want a *store.LockedError", err)
	}
	if waited := time.Since(begin); waited < req.LockTimeout {
		t.Errorf("gave up after %v, before its lock timeout of %v", waited, req.LockTimeout)
	}
	nothingRan(t, cfg, before)

	// released is closed before the unlock: closed after it, a waiting
	// apply could take the lock, run and return while this goroutine
	// waits for the CPU between the two, and the check below would fail.
	released := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		close(released)
		held.Unlock()
	}()
	req.LockTimeout = time.Minute
	resp := apply(t, req)
	select {
	case <-released:
	default:
		t.Fatal("the apply ran while the other operation held the lock")
	}
	if !resp.Ran || resp.Result.Count("done") != len(before) {
		t.Fatalf("the waiting apply ran %v, %s; want all %d steps done", resp.Ran, resp.Summary, len(before))
	}
	if after := planSteps(t, cfg); len(after) != 0 {
		t.Errorf("the pool did not converge: %d steps left", len(after))
	}
}

// saved binds a plan to the configuration and state it was made from, as
// `poolc plan -out` does.
func saved(cfg *compiler.Config, resp *orchestrate.PlanResponse) *pools.SavedPlan {
	return &pools.SavedPlan{
		FormatVersion: pools.SavedPlanFormatVersion, PoolcVersion: "test",
		ConfigHash: cfg.Hash, ConfigFiles: cfg.Files,
		StateLineage: pools.LineageOf(resp.State), StateSerial: resp.State.Serial, StateHash: resp.State.ContentHash(),
		Plan: resp.Plan,
	}
}

// A saved plan runs only against the state it was planned from: once the
// state has moved on, it is refused and nothing runs.
func TestASavedPlanOfAnOlderStateIsRefused(t *testing.T) {
	cfg := sparkLab(t)
	planned, err := orchestrate.Plan(context.Background(), orchestrate.PlanRequest{Common: common(cfg, nil)})
	if err != nil {
		t.Fatal(err)
	}
	plan := saved(cfg, planned)
	// The state moves on after the plan was saved (another apply wrote
	// it; here, a write of the same fleet).
	st, err := stateFile(cfg).Read()
	if err != nil {
		t.Fatal(err)
	}
	st.Pool = cfg.Pool.Name
	if err := stateFile(cfg).Write(st); err != nil {
		t.Fatal(err)
	}
	confirmed := false
	_, err = orchestrate.Apply(context.Background(), orchestrate.ApplyRequest{Common: common(cfg, nil), Saved: plan,
		Confirm: func(*pools.Plan) bool { confirmed = true; return true }})
	if err == nil || !strings.Contains(err.Error(), "saved plan is stale") || !strings.Contains(err.Error(), "plan again") {
		t.Fatalf("apply of a stale saved plan: %v, want it refused as stale", err)
	}
	if confirmed {
		t.Error("a refused saved plan was put up for confirmation")
	}
	if after := planSteps(t, cfg); len(after) != len(planned.Plan.Steps) {
		t.Errorf("the plan has %d steps now, %d before: steps ran", len(after), len(planned.Plan.Steps))
	}

	// Planned again from the state as it is, the saved plan runs, without
	// being confirmed again (it was reviewed when it was saved).
	planned, err = orchestrate.Plan(context.Background(), orchestrate.PlanRequest{Common: common(cfg, nil)})
	if err != nil {
		t.Fatal(err)
	}
	resp := apply(t, orchestrate.ApplyRequest{Common: common(cfg, nil), Saved: saved(cfg, planned),
		Confirm: func(*pools.Plan) bool { confirmed = true; return false }})
	if !resp.Ran || confirmed {
		t.Errorf("a fresh saved plan: ran %v, confirmed %v; want it run without confirmation", resp.Ran, confirmed)
	}
}

// An apply that was killed leaves a journal without its end: the next
// apply says so, refreshes from the plugins instead of trusting the state
// file, carries the pool to its configuration, and closes the journal.
// A plan saved before the interruption is refused.
func TestAnInterruptedApplyIsRecoveredByTheNextOne(t *testing.T) {
	cfg := sparkLab(t)
	steps := planSteps(t, cfg)
	planned, err := orchestrate.Plan(context.Background(), orchestrate.PlanRequest{Common: common(cfg, nil)})
	if err != nil {
		t.Fatal(err)
	}
	// The journal of an apply killed while its first step was in flight.
	j, err := stateFile(cfg).BeginJournal("killed-apply")
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(journal.Record{Event: journal.StepStarted, Step: steps[0].ID, Message: "sim"}); err != nil {
		t.Fatal(err)
	}
	if last, err := stateFile(cfg).LastApply(); err != nil || last == nil {
		t.Fatalf("the journal does not tell the interruption: %v %v", last, err)
	}

	_, err = orchestrate.Apply(context.Background(), orchestrate.ApplyRequest{Common: common(cfg, nil), Saved: saved(cfg, planned)})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("a saved plan after an interrupted apply: %v, want it refused", err)
	}

	var n notices
	req := orchestrate.ApplyRequest{Common: common(cfg, &n)}
	req.Refresh = false // the interruption forces the refresh
	resp := apply(t, req)
	if !strings.Contains(n.all(), "killed-apply") {
		t.Errorf("the interrupted apply was not reported; notices:\n%s", n.all())
	}
	if !resp.Ran || resp.Result.Count("done") != len(steps) {
		t.Errorf("the recovering apply: ran %v, %s; want all %d steps done", resp.Ran, resp.Summary, len(steps))
	}
	if last, err := stateFile(cfg).LastApply(); err != nil || last != nil {
		t.Errorf("after the recovering apply the journal still tells an interrupted apply: %+v %v", last, err)
	}
	if after := planSteps(t, cfg); len(after) != 0 {
		t.Errorf("the pool did not converge: %d steps left", len(after))
	}
}

// An apply whose confirmation is declined runs no step, writes no state,
// and leaves the lock free.
func TestADeclinedConfirmationRunsNothing(t *testing.T) {
	cfg := sparkLab(t)
	before := planSteps(t, cfg)
	var asked *pools.Plan
	var shown int
	resp, err := orchestrate.Apply(context.Background(), orchestrate.ApplyRequest{Common: common(cfg, nil),
		Planned: func(p *pools.Plan, _ []host.Drift) { shown = len(p.Steps) },
		Confirm: func(p *pools.Plan) bool { asked = p; return false }})
	if !errors.Is(err, orchestrate.ErrNotApproved) || resp != nil {
		t.Fatalf("declined apply: %v, %+v; want ErrNotApproved", err, resp)
	}
	if asked == nil || len(asked.Steps) != len(before) || shown != len(before) {
		t.Fatalf("the plan shown (%d steps) and put up for confirmation (%v) is not the plan of the pool (%d steps)", shown, asked, len(before))
	}
	nothingRan(t, cfg, before)
	if info, err := stateFile(cfg).LockInfo(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the lock is still held after the declined apply: %+v %v", info, err)
	}
}
