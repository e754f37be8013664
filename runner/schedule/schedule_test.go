package schedule

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustNew(t *testing.T, steps []Step, pol Policy) *Machine {
	t.Helper()
	m, err := New(steps, pol)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func started(d Decision) []int {
	var s []int
	for _, a := range d.Start {
		s = append(s, a.Step)
	}
	return s
}

func TestNewRefusesGraphsThatCannotEnd(t *testing.T) {
	for _, c := range []struct {
		steps []Step
		want  string
	}{
		{[]Step{{ID: "a"}, {ID: "a"}}, "step a appears twice"},
		{[]Step{{ID: "a", DependsOn: []string{"b"}}}, "step a depends on b, which is not in the plan"},
		{[]Step{{ID: "a", DependsOn: []string{"b"}}, {ID: "b", DependsOn: []string{"a"}}}, "through a cycle"},
	} {
		if _, err := New(c.steps, Policy{Parallelism: 1}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.steps, err, c.want)
		}
	}
	if _, err := New(nil, Policy{}); err == nil {
		t.Error("parallelism 0 accepted")
	}
}

// Ready steps start in plan order up to the parallelism; a dependent
// starts when its dependency is done.
func TestStepsStartInOrderWithinTheParallelism(t *testing.T) {
	m := mustNew(t, []Step{{ID: "a"}, {ID: "b"}, {ID: "c", DependsOn: []string{"a"}}, {ID: "d"}}, Policy{Parallelism: 2})
	if got := started(m.Tick(t0)); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("first starts %v, want [0 1]", got)
	}
	// a done: c became ready after d, which was ready first.
	if got := started(m.Report(t0, Report{Step: 0, End: Success})); len(got) != 1 || got[0] != 3 {
		t.Fatalf("after a: %v, want [3]", got)
	}
	if got := started(m.Report(t0, Report{Step: 1, End: Success})); len(got) != 1 || got[0] != 2 {
		t.Fatalf("after b: %v, want [2]", got)
	}
	m.Report(t0, Report{Step: 3, End: Success})
	if d := m.Report(t0, Report{Step: 2, End: Success}); !d.Over {
		t.Fatal("not over when every step is done")
	}
}

// Retryable failures wait Backoff, then twice as long, up to Retries; the
// step keeps its slot meanwhile.
func TestRetriesBackOffAndStop(t *testing.T) {
	m := mustNew(t, []Step{{ID: "a"}, {ID: "b"}}, Policy{Parallelism: 1, Retries: 2, Backoff: time.Second})
	m.Tick(t0)
	now := t0
	for n, wait := range []time.Duration{time.Second, 2 * time.Second} {
		d := m.Report(now, Report{Step: 0, End: Failure, Retryable: true})
		if len(d.Retry) != 1 || d.Retry[0].At != now.Add(wait) || !d.Wake.Equal(now.Add(wait)) || len(d.Start) != 0 {
			t.Fatalf("retry %d: %+v, want one at +%s and nothing started", n+1, d, wait)
		}
		if d := m.Tick(now.Add(wait - time.Nanosecond)); len(d.Start) != 0 {
			t.Fatalf("retry %d started before its deadline", n+1)
		}
		now = now.Add(wait)
		if d := m.Tick(now); len(d.Start) != 1 || d.Start[0] != (Attempt{Step: 0, Attempt: n + 2}) {
			t.Fatalf("at the deadline: %+v", d.Start)
		}
	}
	d := m.Report(now, Report{Step: 0, End: Failure, Retryable: true})
	if len(d.Retry) != 0 || m.Result(0) != (Result{Outcome: Failed, Attempts: 3, Cause: -1}) {
		t.Fatalf("third failure: %+v, result %+v", d, m.Result(0))
	}
	if got := started(d); len(got) != 1 || got[0] != 1 {
		t.Fatalf("b starts when a's slot frees: %v", got)
	}
}

// A timeout is retried only when the actuator marked it retryable or the
// policy says timeouts are; a plain failure only when marked.
func TestWhatIsRetried(t *testing.T) {
	for _, c := range []struct {
		r             Report
		retryTimeouts bool
		want          bool
	}{
		{Report{End: Failure}, true, false},
		{Report{End: Failure, Retryable: true}, false, true},
		{Report{End: Timeout}, false, false},
		{Report{End: Timeout, Retryable: true}, false, true},
		{Report{End: Timeout}, true, true},
		{Report{End: Cancel, Retryable: true}, true, false},
	} {
		m := mustNew(t, []Step{{ID: "a"}}, Policy{Parallelism: 1, Retries: 1, RetryTimeouts: c.retryTimeouts})
		m.Tick(t0)
		if d := m.Report(t0, c.r); (len(d.Retry) == 1) != c.want {
			t.Errorf("%+v with RetryTimeouts %v: retried %v, want %v", c.r, c.retryTimeouts, len(d.Retry) == 1, c.want)
		}
	}
}

// A failure skips its dependents, transitively, naming itself; an
// independent branch goes on.
func TestAFailureSkipsItsDependentsNamingIt(t *testing.T) {
	m := mustNew(t, []Step{{ID: "a"}, {ID: "b", DependsOn: []string{"a"}}, {ID: "c", DependsOn: []string{"b"}}, {ID: "d"}}, Policy{Parallelism: 1})
	m.Tick(t0)
	d := m.Report(t0, Report{Step: 0, End: Failure})
	if len(d.Skip) != 2 || d.Skip[0] != (Skip{Step: 1, Cause: 0}) || d.Skip[1] != (Skip{Step: 2, Cause: 0}) {
		t.Fatalf("skips %+v", d.Skip)
	}
	if got := started(d); len(got) != 1 || got[0] != 3 {
		t.Fatalf("d does not go on: %v", got)
	}
}

// Cancel cancels what has not started and what waits for a retry; what
// is in flight ends as reported.
func TestCancelLetsTheInFlightEnd(t *testing.T) {
	m := mustNew(t, []Step{{ID: "a"}, {ID: "b"}, {ID: "c"}}, Policy{Parallelism: 2, Retries: 1, Backoff: time.Second})
	m.Tick(t0)
	m.Report(t0, Report{Step: 0, End: Failure, Retryable: true}) // a waits for its retry
	d := m.Cancel(t0)
	if len(d.Cancelled) != 2 || d.Cancelled[0] != 0 || d.Cancelled[1] != 2 || d.Over || !d.Wake.IsZero() {
		t.Fatalf("cancel: %+v", d)
	}
	d = m.Report(t0, Report{Step: 1, End: Success})
	if !d.Over || m.Result(1).Outcome != Done || len(d.Start) != 0 {
		t.Fatalf("b finished after the cancel: %+v, %+v", d, m.Result(1))
	}
}
