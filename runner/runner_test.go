package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/pools"
)

// fake is an in-process actuator whose behaviour per step ID the test sets.
type fake struct {
	mu        sync.Mutex
	calls     map[string]int
	inFlight  atomic.Int32
	maxFlight atomic.Int32
	behave    func(id string, call int, ctx context.Context) Response
}

func (f *fake) Apply(ctx context.Context, step pools.Step, progress pools.ProgressFunc) Response {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxFlight.Load()
		if n <= m || f.maxFlight.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[step.ID]++
	call := f.calls[step.ID]
	f.mu.Unlock()
	if progress != nil {
		progress(pools.Progress{Message: "working", Fraction: 0.5})
	}
	if f.behave != nil {
		return f.behave(step.ID, call, ctx)
	}
	return Response{}
}

func (f *fake) For(pools.Step) (Actuator, string, bool) { return f, "fake", true }

type memRecorder struct {
	mu       sync.Mutex
	writes   int
	last     *pools.State
	finished int // what the last snapshot said it holds
	journal  []string
	effects  int
	failAt   int // the journal fails from this record on (1-based); 0 never
	written  func(*pools.State)
}

func (m *memRecorder) WriteState(st *pools.State, finished int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	m.last, m.finished = st, finished
	if m.written != nil {
		m.written(st)
	}
	return nil
}

func (m *memRecorder) Journal(r journal.Record) func() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAt > 0 && len(m.journal)+1 >= m.failAt {
		return func() error { return errors.New("disk full") }
	}
	m.journal = append(m.journal, string(r.Event)+" "+r.Step)
	if r.Effect != nil {
		m.effects++
	}
	return func() error { return nil }
}

// routes builds a plan of route steps; deps maps a step index to the
// indices it depends on.
func routes(n int, deps map[int][]int) *pools.Plan {
	p := &pools.Plan{}
	for i := range n {
		s := pools.Step{ID: fmt.Sprintf("route:a%d", i), Kind: pools.StepRoute, Route: &pools.Route{Alias: fmt.Sprintf("a%d", i), Lane: pools.Cloud}, DependsOn: []string{}}
		for _, d := range deps[i] {
			s.DependsOn = append(s.DependsOn, fmt.Sprintf("route:a%d", d))
		}
		p.Steps = append(p.Steps, s)
	}
	return p
}

func emptyState() *pools.State {
	st := &pools.State{FormatVersion: 1}
	st.Normalize()
	return st
}

func TestRunRespectsParallelismAndRecordsEveryStep(t *testing.T) {
	f := &fake{behave: func(string, int, context.Context) Response {
		time.Sleep(5 * time.Millisecond)
		return Response{}
	}}
	rec := &memRecorder{}
	res := Run(context.Background(), routes(40, nil), emptyState(), f, rec, Options{Parallelism: 4})
	if !res.OK() || res.Count(Done) != 40 {
		t.Fatalf("result: %+v", res)
	}
	if m := f.maxFlight.Load(); m > 4 || m < 2 {
		t.Errorf("max in flight = %d, want 2..4", m)
	}
	if len(res.State.Routes) != 40 || rec.last == nil || len(rec.last.Routes) != 40 {
		t.Errorf("state after the run has %d routes, last written %v", len(res.State.Routes), rec.last)
	}
}

func TestAFailedStepSkipsItsDependentsOnly(t *testing.T) {
	// 0 <- 1 <- 2, and 3 independent.
	f := &fake{behave: func(id string, _ int, _ context.Context) Response {
		if id == "route:a0" {
			return Response{Diagnostics: pools.StepFailure("boom")}
		}
		return Response{}
	}}
	res := Run(context.Background(), routes(4, map[int][]int{1: {0}, 2: {1}}), emptyState(), f, &memRecorder{}, Options{})
	want := []Outcome{Failed, Skipped, Skipped, Done}
	for i, s := range res.Steps {
		if s.Outcome != want[i] {
			t.Errorf("%s: %s, want %s", s.ID, s.Outcome, want[i])
		}
	}
	if f.calls["route:a1"] != 0 || f.calls["route:a2"] != 0 {
		t.Error("a skipped step was sent to the actuator")
	}
	if res.OK() {
		t.Error("a run with a failed step reports OK")
	}
}

func TestOnlyRetryableFailuresAreRetried(t *testing.T) {
	f := &fake{behave: func(id string, call int, _ context.Context) Response {
		switch {
		case id == "route:a0" && call < 3:
			return Response{Retryable: true, Diagnostics: pools.StepFailure("busy")}
		case id == "route:a1":
			return Response{Diagnostics: pools.StepFailure("wrong")}
		}
		return Response{}
	}}
	var retries atomic.Int32
	res := Run(context.Background(), routes(2, nil), emptyState(), f, &memRecorder{}, Options{Backoff: time.Millisecond, Events: func(e Event) {
		if e.Kind == EventRetry {
			retries.Add(1)
		}
	}})
	if res.Steps[0].Outcome != Done || res.Steps[0].Attempts != 3 || retries.Load() != 2 {
		t.Errorf("retryable step: %+v, %d retries", res.Steps[0], retries.Load())
	}
	if res.Steps[1].Outcome != Failed || res.Steps[1].Attempts != 1 {
		t.Errorf("plain failure: %+v", res.Steps[1])
	}
}

// A step that hangs times out and, unless its plugin marks the failure
// retryable or the run retries timeouts, is not tried again: it may still
// be running on its target. The plugin here answers at its deadline, so
// which of its error and the deadline comes first varies from run to
// run; the decision does not.
func TestATimedOutStepIsRetriedOnlyWhenMarkedSo(t *testing.T) {
	for _, c := range []struct {
		name          string
		retryable     bool
		retryTimeouts bool
		attempts      int
	}{
		{"plain", false, false, 1},
		{"marked retryable", true, false, 2},
		{"timeouts retried", false, true, 2},
	} {
		for range 5 {
			f := &fake{behave: func(_ string, _ int, ctx context.Context) Response {
				d, _ := ctx.Deadline()
				time.Sleep(time.Until(d))
				return Response{Retryable: c.retryable, Diagnostics: pools.StepFailure("no answer")}
			}}
			res := Run(context.Background(), routes(1, nil), emptyState(), f, &memRecorder{},
				Options{StepTimeout: 5 * time.Millisecond, Retries: 1, Backoff: time.Millisecond, RetryTimeouts: c.retryTimeouts})
			s := res.Steps[0]
			if s.Outcome != Failed || s.Attempts != c.attempts || s.Diagnostics[0].Message != "timed out after 5ms" {
				t.Fatalf("%s: hung step %+v, want failed after %d attempts", c.name, s, c.attempts)
			}
		}
	}
}

// A retry waits its backoff, doubling each time.
func TestRetriesWaitTheirBackoff(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	f := &fake{behave: func(string, int, context.Context) Response {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return Response{Retryable: true, Diagnostics: pools.StepFailure("busy")}
	}}
	res := Run(context.Background(), routes(1, nil), emptyState(), f, &memRecorder{}, Options{Retries: 2, Backoff: 20 * time.Millisecond})
	if s := res.Steps[0]; s.Outcome != Failed || s.Attempts != 3 || len(at) != 3 {
		t.Fatalf("step %+v after %d calls", s, len(at))
	}
	for k, want := range []time.Duration{20 * time.Millisecond, 40 * time.Millisecond} {
		if got := at[k+1].Sub(at[k]); got < want {
			t.Errorf("retry %d came %s after the failure, before its backoff %s", k+1, got, want)
		}
	}
}

// A cycle in the plan fails every step instead of waiting for ever.
func TestAPlanWithACycleFails(t *testing.T) {
	res := Run(context.Background(), routes(2, map[int][]int{0: {1}, 1: {0}}), emptyState(), &fake{}, &memRecorder{}, Options{})
	if res.Count(Failed) != 2 || !strings.Contains(res.Steps[0].Diagnostics[0].Message, "cycle") {
		t.Fatalf("steps: %+v", res.Steps)
	}
}

func TestCancellingStopsNewStepsAndCancelsThoseInFlight(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 10)
	f := &fake{behave: func(_ string, _ int, sctx context.Context) Response {
		started <- struct{}{}
		<-sctx.Done()
		return Response{Diagnostics: pools.StepFailure("cancelled")}
	}}
	rec := &memRecorder{}
	go func() {
		<-started
		<-started
		cancel()
	}()
	res := Run(ctx, routes(10, nil), emptyState(), f, rec, Options{Parallelism: 2})
	if res.Count(Cancelled) != 10 || res.Count(Done) != 0 {
		t.Fatalf("outcomes: %+v", res.Steps)
	}
	if len(f.calls) != 2 {
		t.Errorf("%d steps reached the actuator after cancelling, want the 2 in flight", len(f.calls))
	}
}

// Steps are asked for progress only when something watches the run, and
// then their reports reach it as events.
func TestProgressIsAskedForOnlyWhenWatched(t *testing.T) {
	var asked atomic.Int32
	f := &fake{}
	acts := actuatorFunc(func(ctx context.Context, s pools.Step, progress pools.ProgressFunc) Response {
		if progress != nil {
			asked.Add(1)
		}
		return f.Apply(ctx, s, progress)
	})
	if res := Run(context.Background(), routes(3, nil), emptyState(), acts, &memRecorder{}, Options{}); !res.OK() {
		t.Fatalf("result: %+v", res)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("unwatched run: %d steps got a progress function, want none", n)
	}
	var mu sync.Mutex
	reports := 0
	res := Run(context.Background(), routes(3, nil), emptyState(), acts, &memRecorder{}, Options{Events: func(e Event) {
		if e.Kind == EventProgress && e.Message == "working" {
			mu.Lock()
			reports++
			mu.Unlock()
		}
	}})
	if !res.OK() {
		t.Fatalf("result: %+v", res)
	}
	if n := asked.Load(); n != 3 || reports != 3 {
		t.Errorf("watched run: %d steps got a progress function and %d reports arrived, want 3 and 3", n, reports)
	}
}

// actuatorFunc serves every step with one function.
type actuatorFunc func(ctx context.Context, s pools.Step, progress pools.ProgressFunc) Response

func (a actuatorFunc) For(pools.Step) (Actuator, string, bool) { return a, "fake", true }
func (a actuatorFunc) Apply(ctx context.Context, s pools.Step, progress pools.ProgressFunc) Response {
	return a(ctx, s, progress)
}
