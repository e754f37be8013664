package schedule

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// A driver plays a run against the machine over a random DAG: each round
// it reports a random in-flight attempt with a random end (success,
// failure, retryable failure, timeout, retryable timeout, cancel), or lets
// the clock run to the next retry, or cancels the run, and checks every
// decision against the rules.
func TestMachineKeepsItsRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 24).Draw(t, "steps")
		steps := make([]Step, n)
		deps := make([][]int, n)
		for i := range steps {
			steps[i].ID = fmt.Sprintf("s%d", i)
			for j := range i {
				if rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("dep %d on %d", i, j)) == 0 {
					steps[i].DependsOn = append(steps[i].DependsOn, steps[j].ID)
					deps[i] = append(deps[i], j)
				}
			}
		}
		// Shuffle the plan order, so dependencies may come after.
		perm := rapid.Permutation(indices(n)).Draw(t, "order")
		plan := make([]Step, n)
		pos := make([]int, n) // pos[original] = index in plan
		for k, i := range perm {
			plan[k] = steps[i]
			pos[i] = k
		}
		pdeps := make([][]int, n)
		for i, ds := range deps {
			for _, j := range ds {
				pdeps[pos[i]] = append(pdeps[pos[i]], pos[j])
			}
		}
		pol := Policy{
			Parallelism:   rapid.IntRange(1, 5).Draw(t, "parallelism"),
			Retries:       rapid.IntRange(0, 3).Draw(t, "retries"),
			Backoff:       time.Duration(rapid.IntRange(0, 5).Draw(t, "backoff")) * time.Second,
			RetryTimeouts: rapid.Bool().Draw(t, "retry timeouts"),
		}
		m, err := New(plan, pol)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var (
			outcome  = make([]Outcome, n)
			endings  = make([]int, n) // how many outcomes each step was given
			attempts = make([]int, n)
			retryAt  = make([]time.Time, n)
			waiting  = map[int]bool{} // steps waiting out a backoff
			flight   []int            // steps with an attempt in flight
			stopped  bool
		)
		end := func(i int, o Outcome) {
			outcome[i] = o
			endings[i]++
		}
		check := func(d Decision, reported *Report) {
			if reported != nil {
				r, i := *reported, reported.Step
				failedish := r.End != Success
				allowed := !stopped && attempts[i] <= pol.Retries &&
					(r.End == Failure && r.Retryable || r.End == Timeout && (r.Retryable || pol.RetryTimeouts))
				var retried *Retry
				for k := range d.Retry {
					if d.Retry[k].Step == i {
						retried = &d.Retry[k]
					}
				}
				switch {
				case retried != nil && !allowed:
					t.Fatalf("%s retried after %v (attempt %d of at most %d, stopped %v)", plan[i].ID, r, attempts[i], 1+pol.Retries, stopped)
				case retried == nil && allowed:
					t.Fatalf("%s not retried after %v (attempt %d of at most %d)", plan[i].ID, r, attempts[i], 1+pol.Retries)
				case retried != nil:
					want := now.Add(pol.Backoff << (attempts[i] - 1))
					if !retried.At.Equal(want) || retried.Attempt != attempts[i] {
						t.Fatalf("%s retry %+v, want at %s after attempt %d", plan[i].ID, *retried, want, attempts[i])
					}
					retryAt[i] = retried.At
					waiting[i] = true
				case !failedish:
					end(i, Done)
				case r.End == Cancel:
					end(i, Cancelled)
				default:
					end(i, Failed)
				}
			}
			if len(d.Retry) > 1 || reported == nil && len(d.Retry) > 0 {
				t.Fatalf("retries %v decided for no failure", d.Retry)
			}
			for _, c := range d.Cancelled {
				if !stopped {
					t.Fatalf("%s cancelled while the run was not stopped", plan[c].ID)
				}
				delete(waiting, c)
				end(c, Cancelled)
			}
			for _, s := range d.Skip {
				if o := outcome[s.Cause]; o != Failed && o != Cancelled {
					t.Fatalf("%s skipped for %s, which is %s", plan[s.Step].ID, plan[s.Cause].ID, o)
				}
				if !reaches(pdeps, s.Step, s.Cause) {
					t.Fatalf("%s skipped for %s, which it does not depend on", plan[s.Step].ID, plan[s.Cause].ID)
				}
				end(s.Step, Skipped)
			}
			for _, a := range d.Start {
				i := a.Step
				if stopped {
					t.Fatalf("%s started after the run was cancelled", plan[i].ID)
				}
				for _, j := range pdeps[i] {
					if outcome[j] != Done {
						t.Fatalf("%s started while %s, which it depends on, is %s", plan[i].ID, plan[j].ID, outcome[j])
					}
				}
				if outcome[i] != Pending {
					t.Fatalf("%s started though it is %s", plan[i].ID, outcome[i])
				}
				attempts[i]++
				if a.Attempt != attempts[i] || attempts[i] > 1+pol.Retries {
					t.Fatalf("%s attempt %d (counted %d, at most %d)", plan[i].ID, a.Attempt, attempts[i], 1+pol.Retries)
				}
				if attempts[i] > 1 {
					if !waiting[i] || now.Before(retryAt[i]) {
						t.Fatalf("%s retried at %s, before its deadline %s (waiting %v)", plan[i].ID, now, retryAt[i], waiting[i])
					}
					delete(waiting, i)
				}
				flight = append(flight, i)
			}
			if busy := len(flight) + len(waiting); busy > pol.Parallelism || busy != m.InProgress() {
				t.Fatalf("%d steps in progress (machine says %d), parallelism %d", busy, m.InProgress(), pol.Parallelism)
			}
			var wake time.Time
			for i := range waiting {
				if wake.IsZero() || retryAt[i].Before(wake) {
					wake = retryAt[i]
				}
			}
			if !d.Wake.Equal(wake) {
				t.Fatalf("wake at %s, want %s", d.Wake, wake)
			}
			open := 0
			for _, o := range outcome {
				if o == Pending {
					open++
				}
			}
			if d.Over != (open == 0) {
				t.Fatalf("over %v with %d steps open", d.Over, open)
			}
		}
		d := m.Tick(now)
		check(d, nil)
		// Each round ends an attempt, passes a backoff or cancels, so
		// this bounds a run that keeps its rules.
		limit := 3*n*(2+pol.Retries) + 2
		for round := 0; !d.Over; round++ {
			if round > limit {
				t.Fatalf("not over after %d rounds", round)
			}
			if len(flight) == 0 && d.Wake.IsZero() {
				t.Fatal("not over, yet nothing in flight and no retry waits")
			}
			choice := rapid.IntRange(0, 9).Draw(t, "choice")
			switch {
			case choice == 0 && !stopped:
				stopped = true
				d = m.Cancel(now)
				check(d, nil)
			case (choice == 1 || len(flight) == 0) && !d.Wake.IsZero():
				now = d.Wake
				d = m.Tick(now)
				check(d, nil)
			case len(flight) > 0:
				now = now.Add(time.Duration(rapid.IntRange(0, 3000).Draw(t, "elapsed ms")) * time.Millisecond)
				k := rapid.IntRange(0, len(flight)-1).Draw(t, "which")
				i := flight[k]
				flight = append(flight[:k], flight[k+1:]...)
				r := Report{Step: i, End: End(rapid.IntRange(1, 4).Draw(t, "end")), Retryable: rapid.Bool().Draw(t, "retryable")}
				d = m.Report(now, r)
				check(d, &r)
			}
		}
		for i := range plan {
			if endings[i] != 1 {
				t.Fatalf("%s was given %d outcomes", plan[i].ID, endings[i])
			}
			if got := m.Result(i); got.Outcome != outcome[i] || got.Attempts != attempts[i] {
				t.Fatalf("%s: machine says %+v, driver saw %s after %d attempts", plan[i].ID, got, outcome[i], attempts[i])
			}
		}
	})
}

func indices(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// reaches reports whether step i depends on step j, directly or not.
func reaches(deps [][]int, i, j int) bool {
	for _, k := range deps[i] {
		if k == j || reaches(deps, k, j) {
			return true
		}
	}
	return false
}

// InProgress is the number of steps running or waiting out a backoff.
func (m *Machine) InProgress() int { return m.busy }
