// Package schedule decides how a step DAG is carried out, as a pure state
// machine: given the steps and their dependencies, a parallelism and a
// retry policy, and told how each attempt of a step ended and what time
// it is, it says which steps start now, which attempts are tried again
// and when, which steps are skipped because a step they depend on did not
// succeed, which are cancelled, and when the run is over.
//
// The machine runs nothing and reads no clock: every call takes the time
// as an argument, so the runner drives it with goroutines and the wall
// clock, and the simulator with virtual-time events, and both follow the
// same rules:
//
//   - A step starts once every step it depends on is done, in the order
//     steps became ready (plan order first), while fewer than Parallelism
//     steps are in progress. A step waiting out a backoff is in progress:
//     it keeps its slot, so its retry starts at its deadline.
//   - A failed attempt is tried again only when the actuator marked it
//     retryable; a timed-out attempt only when the actuator marked it
//     retryable or Policy.RetryTimeouts is set, because a step that timed
//     out may still be running on its target. A step is tried at most
//     1+Retries times; the n-th retry waits Backoff·2^(n-1) after the
//     failure it follows.
//   - A step that ends failed, timed out or cancelled skips every step
//     that depends on it, directly or not, naming it as the cause.
//   - Cancel starts nothing more: steps not started and steps waiting out
//     a backoff are cancelled at once; steps in flight end as reported.
//   - The run is over when every step has an outcome: done, failed,
//     skipped or cancelled, exactly one each.
package schedule

import (
	"errors"
	"fmt"
	"time"
)

// Step is one node of the DAG: its ID and the IDs of the steps it
// depends on.
type Step struct {
	ID        string
	DependsOn []string
}

// Policy holds the rules of a run.
type Policy struct {
	// Parallelism is the most steps in progress at once (at least 1).
	Parallelism int
	// Retries is the most times one step is tried again (0: never).
	Retries int
	// Backoff is the wait before a step's first retry; each further
	// retry of the step waits twice as long as the one before.
	Backoff time.Duration
	// RetryTimeouts makes a timed-out attempt retryable even when the
	// actuator did not mark it so.
	RetryTimeouts bool
}

// End says how one attempt of a step ended.
type End uint8

// The ways an attempt ends.
const (
	// Success is an attempt after which the step took effect.
	Success End = iota + 1
	// Failure is an attempt the actuator reported an error of.
	Failure
	// Timeout is an attempt that ran out of its time limit.
	Timeout
	// Cancel is an attempt cancelled because the run is being stopped.
	Cancel
)

var endNames = [...]string{Success: "success", Failure: "failure", Timeout: "timeout", Cancel: "cancel"}

// String names the end.
func (e End) String() string {
	if int(e) < len(endNames) && endNames[e] != "" {
		return endNames[e]
	}
	return fmt.Sprintf("End(%d)", e)
}

// Report is how an attempt of a step ended, as the one carrying it out
// saw it.
type Report struct {
	// Step is the step's index in the steps given to New.
	Step int
	End  End
	// Retryable says the actuator marked the failure worth trying again;
	// it matters for Failure and Timeout only.
	Retryable bool
}

// Outcome is what finally became of a step.
type Outcome uint8

// The outcomes of a step; Pending until it has one.
const (
	// Pending is the outcome of a step that has none yet.
	Pending Outcome = iota
	// Done is the outcome of a step that succeeded.
	Done
	// Failed is the outcome of a step whose last attempt failed.
	Failed
	// Skipped is the outcome of a step whose dependency, directly or
	// not, did not succeed.
	Skipped
	// Cancelled is the outcome of a step cancelled before its next
	// attempt began (Cancel, or an attempt that ended cancelled).
	Cancelled
)

var outcomeNames = [...]string{Pending: "pending", Done: "done", Failed: "failed", Skipped: "skipped", Cancelled: "cancelled"}

// String names the outcome (test failures in runner, sim and schedule
// print it).
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", o)
}

// Attempt is an attempt of a step to start now; the first is 1.
type Attempt struct {
	Step, Attempt int
}

// Retry says that attempt Attempt of Step failed and the step is tried
// again at At.
type Retry struct {
	Step, Attempt int
	At            time.Time
}

// Skip says that Step will never run because Cause, a step it depends on
// directly or not, did not succeed.
type Skip struct {
	Step, Cause int
}

// Decision is what the machine decided at one call. Its slices are reused
// by the next call: read them before calling the machine again.
type Decision struct {
	// Start are the attempts to begin now, in order.
	Start []Attempt
	// Retry are the failed attempts that will be tried again.
	Retry []Retry
	// Skip are the steps that can no longer run.
	Skip []Skip
	// Cancelled are the steps cancelled before their next attempt began.
	Cancelled []int
	// Wake is the earliest time a retry waits for; the driver calls Tick
	// then. It is zero when no retry waits.
	Wake time.Time
	// Over says every step has its outcome.
	Over bool
}

// Result is what became of one step.
type Result struct {
	Outcome Outcome
	// Attempts is how many attempts of the step began.
	Attempts int
	// Cause is, for a skipped step, the index of the step whose failure
	// skipped it; -1 otherwise.
	Cause int
}

type phase uint8

const (
	waiting phase = iota // some dependency is not done
	ready                // queued for a free slot
	running              // an attempt is in flight
	backoff              // waiting to be tried again
	final                // has its outcome
)

type state struct {
	phase    phase
	outcome  Outcome
	deps     int // dependencies not done
	attempts int
	cause    int
	retryAt  time.Time
}

// Machine is the state of one run. It is not safe for concurrent use:
// one driver calls it.
type Machine struct {
	pol        Policy
	steps      []state
	dependents [][]int
	queue      []int // ready steps, oldest first
	head       int   // queue[head:] are still queued
	busy       int   // steps running or waiting out a backoff
	open       int   // steps without an outcome
	waits      []int // steps waiting out a backoff
	stopping   bool
	d          Decision
}

// New makes the machine for a DAG of steps under a policy. It refuses
// duplicate IDs, dependencies on unknown steps and cycles, since a run of
// such a graph could never end.
func New(steps []Step, pol Policy) (*Machine, error) {
	switch {
	case pol.Parallelism < 1:
		return nil, fmt.Errorf("parallelism %d: want at least 1", pol.Parallelism)
	case pol.Retries < 0:
		return nil, fmt.Errorf("retries %d: want 0 or more", pol.Retries)
	case pol.Backoff < 0:
		return nil, fmt.Errorf("backoff %s: want 0 or more", pol.Backoff)
	}
	index := make(map[string]int, len(steps))
	for i, s := range steps {
		if _, dup := index[s.ID]; dup {
			return nil, fmt.Errorf("step %s appears twice", s.ID)
		}
		index[s.ID] = i
	}
	m := &Machine{pol: pol, steps: make([]state, len(steps)), dependents: make([][]int, len(steps)), open: len(steps)}
	for i, s := range steps {
		m.steps[i].cause = -1
		for _, d := range s.DependsOn {
			j, ok := index[d]
			if !ok {
				return nil, fmt.Errorf("step %s depends on %s, which is not in the plan", s.ID, d)
			}
			m.dependents[j] = append(m.dependents[j], i)
			m.steps[i].deps++
		}
	}
	if err := m.acyclic(steps); err != nil {
		return nil, err
	}
	for i := range m.steps {
		if m.steps[i].deps == 0 {
			m.steps[i].phase = ready
			m.queue = append(m.queue, i)
		}
	}
	return m, nil
}

// acyclic checks that every step can be reached by taking steps whose
// dependencies are taken (Kahn's algorithm), naming a step on a cycle
// otherwise.
func (m *Machine) acyclic(steps []Step) error {
	deps := make([]int, len(m.steps))
	var next []int
	for i := range m.steps {
		deps[i] = m.steps[i].deps
		if deps[i] == 0 {
			next = append(next, i)
		}
	}
	seen := 0
	for len(next) > 0 {
		i := next[len(next)-1]
		next = next[:len(next)-1]
		seen++
		for _, j := range m.dependents[i] {
			if deps[j]--; deps[j] == 0 {
				next = append(next, j)
			}
		}
	}
	if seen == len(steps) {
		return nil
	}
	for i, d := range deps {
		if d > 0 {
			return errors.New("step " + steps[i].ID + " depends on itself through a cycle of dependencies")
		}
	}
	return nil
}

// Result says what became of step i so far.
func (m *Machine) Result(i int) Result {
	s := &m.steps[i]
	return Result{Outcome: s.outcome, Attempts: s.attempts, Cause: s.cause}
}

// Tick starts what may start at now: retries whose time has come, then
// ready steps while slots are free. The driver calls it first, to start
// the run, and at each Decision's Wake.
func (m *Machine) Tick(now time.Time) Decision {
	m.reset()
	m.fill(now)
	return m.decide()
}

// Report records how an attempt ended at now and decides what follows.
// It panics when the step has no attempt in flight, a driver's mistake.
func (m *Machine) Report(now time.Time, r Report) Decision {
	m.reset()
	if r.Step < 0 || r.Step >= len(m.steps) || m.steps[r.Step].phase != running {
		panic(fmt.Sprintf("schedule: report %s of step %d, which has no attempt in flight", r.End, r.Step))
	}
	s := &m.steps[r.Step]
	switch {
	case r.End == Success:
		m.busy--
		m.settle(r.Step, Done)
		for _, j := range m.dependents[r.Step] {
			t := &m.steps[j]
			if t.deps--; t.deps == 0 && t.phase == waiting {
				t.phase = ready
				m.queue = append(m.queue, j)
			}
		}
	case m.retries(r, s.attempts):
		s.phase = backoff
		s.retryAt = now.Add(m.wait(s.attempts))
		m.waits = append(m.waits, r.Step)
		m.d.Retry = append(m.d.Retry, Retry{Step: r.Step, Attempt: s.attempts, At: s.retryAt})
	default:
		m.busy--
		o := Failed
		if r.End == Cancel {
			o = Cancelled
		}
		m.settle(r.Step, o)
		m.skip(r.Step)
	}
	m.fill(now)
	return m.decide()
}

// Cancel stops the run at now: nothing starts any more; steps not yet
// started and steps waiting to be retried are cancelled; the attempts in
// flight are left to end and be reported.
func (m *Machine) Cancel(now time.Time) Decision {
	m.reset()
	m.stopping = true
	for i := range m.steps {
		switch m.steps[i].phase {
		case backoff:
			m.busy--
			fallthrough
		case waiting, ready:
			m.settle(i, Cancelled)
			m.d.Cancelled = append(m.d.Cancelled, i)
		}
	}
	m.queue, m.head, m.waits = m.queue[:0], 0, m.waits[:0]
	return m.decide()
}

// retries says whether the policy tries a step again after attempt n
// ended as r.
func (m *Machine) retries(r Report, n int) bool {
	if m.stopping || n > m.pol.Retries {
		return false
	}
	switch r.End {
	case Failure:
		return r.Retryable
	case Timeout:
		return r.Retryable || m.pol.RetryTimeouts
	}
	return false
}

// wait is the backoff after attempt n: Backoff·2^(n-1), without
// overflowing.
func (m *Machine) wait(n int) time.Duration {
	d := m.pol.Backoff
	for ; n > 1 && d < time.Duration(1<<62); n-- {
		d *= 2
	}
	return d
}

func (m *Machine) reset() {
	m.d.Start, m.d.Retry, m.d.Skip, m.d.Cancelled = m.d.Start[:0], m.d.Retry[:0], m.d.Skip[:0], m.d.Cancelled[:0]
	m.d.Wake, m.d.Over = time.Time{}, false
}

// fill starts the retries due at now, then ready steps while slots are
// free.
func (m *Machine) fill(now time.Time) {
	if m.stopping {
		return
	}
	kept := m.waits[:0]
	for _, i := range m.waits {
		s := &m.steps[i]
		if s.retryAt.After(now) {
			kept = append(kept, i)
			continue
		}
		m.begin(i)
	}
	m.waits = kept
	for m.busy < m.pol.Parallelism && m.head < len(m.queue) {
		i := m.queue[m.head]
		m.head++
		m.busy++
		m.begin(i)
	}
	if m.head == len(m.queue) {
		m.queue, m.head = m.queue[:0], 0
	}
}

func (m *Machine) begin(i int) {
	s := &m.steps[i]
	s.phase = running
	s.attempts++
	m.d.Start = append(m.d.Start, Attempt{Step: i, Attempt: s.attempts})
}

func (m *Machine) settle(i int, o Outcome) {
	s := &m.steps[i]
	s.phase, s.outcome = final, o
	m.open--
}

// skip gives every step depending on step cause, directly or not, the
// outcome skipped.
func (m *Machine) skip(cause int) {
	queue := append([]int(nil), m.dependents[cause]...)
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		s := &m.steps[i]
		if s.phase == final {
			continue
		}
		// Its dependency is not done, so it is waiting.
		m.settle(i, Skipped)
		s.cause = cause
		m.d.Skip = append(m.d.Skip, Skip{Step: i, Cause: cause})
		queue = append(queue, m.dependents[i]...)
	}
}

func (m *Machine) decide() Decision {
	for _, i := range m.waits {
		if at := m.steps[i].retryAt; m.d.Wake.IsZero() || at.Before(m.d.Wake) {
			m.d.Wake = at
		}
	}
	m.d.Over = m.open == 0
	return m.d
}
