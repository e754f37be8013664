// Package controller decides what the continuous-mode controller does
// with the plan of each tick: apply it, advise it, or wait. It is a pure
// function of the plan (made by the real placer and planner from the
// current fleet), the controller's memory and the time; the caller plans,
// carries out what is decided and keeps the memory between ticks.
//
// The rules:
//   - a plan that restores coverage (an alias with no live lane gets one)
//     or vacates a cordoned node is urgent and acts at once;
//   - any other plan must stay the same for StableTicks ticks
//     (ResidencyStableTicks when it changes a residency), gain at
//     least MinGainGB, come Cooldown after the last apply, fit the hourly
//     load budget beside what was loaded in the last hour, and interrupt
//     no alias;
//   - a failed apply backs off: Backoff, doubling on each failure up to
//     MaxBackoff; meanwhile only an urgent plan that does not retry a
//     step that failed acts;
//   - while a change is in progress nothing else is applied, except an
//     urgent plan whose routes differ from the change's: it preempts it;
//   - in advise mode the plan that would be applied is advised once.
//
// Warm (demand.go) decides which on-demand lanes demand holds warm; the
// caller plans with them as preferred.
//
// The package knows nothing of how its decisions are carried out: the
// fleet simulator (sim, its tick loop in sim/loop.go) is one caller, and
// a live continuous mode over the real plugins would be another.
package controller

import (
	"fmt"
	"slices"
	"time"

	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/pools"
)

// Settings tune the controller.
type Settings struct {
	// StableTicks is how many ticks a non-urgent plan must stay the same.
	StableTicks int
	// ResidencyStableTicks is the same for plans that change a residency.
	ResidencyStableTicks int
	// MinGainGB is the least gain (Analysis.GainGB) of a non-urgent plan.
	MinGainGB float64
	// Cooldown is the least time from the last apply to a non-urgent one.
	Cooldown time.Duration
	// LoadBudgetGBPerHour caps the weights loaded in any hour by applies,
	// a non-urgent plan included; a plan that loads more than the whole
	// budget waits for an hour with no other load.
	LoadBudgetGBPerHour float64
	// Backoff is the wait after the first failed apply; it doubles on each
	// further failure, up to MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// PromotePerMinute and DemotePerMinute are the request rates at which
	// Warm holds an on-demand lane warm and lets it go.
	PromotePerMinute, DemotePerMinute float64
}

// Input is what one tick decides from.
type Input struct {
	// Now is the time of the tick.
	Now time.Duration
	// Plan is this tick's plan, made from Pool.
	Plan *pools.Plan
	// Pool is the configuration in force: profile and cordons applied.
	Pool *pools.Pool
	// Advise makes an applicable plan advised instead of applied.
	Advise bool
	// InProgress is the plan being carried out, or nil.
	InProgress *pools.Plan
}

// Verdict is what the controller does this tick.
type Verdict string

// The verdicts.
const (
	// Apply carries the plan out this tick.
	Apply Verdict = "apply"
	// Advise shows the plan this tick without carrying it out (advise
	// mode).
	Advise Verdict = "advise"
	// Wait does nothing this tick.
	Wait Verdict = "wait"
)

// Code classifies the reason of a decision, for callers that report only
// when it changes.
type Code string

// The reasons a decision gives.
const (
	// NoChanges is the reason when the fleet matches the configuration.
	NoChanges Code = "no-changes"
	// Urgent is the reason when the plan is urgent, so it is acted on at
	// once without waiting for it to be stable.
	Urgent Code = "urgent"
	// Ready is the reason when the plan passed every gate and is acted on.
	Ready Code = "ready"
	// InProgress is the reason when a change is being carried out.
	InProgress Code = "in-progress"
	// Preempt is the reason when an urgent plan with other routes replaces
	// the change in progress.
	Preempt Code = "preempt"
	// BackingOff is the reason when applies are held back after a failed one.
	BackingOff Code = "backoff"
	// Advised is the reason when this plan was advised already.
	Advised Code = "advised"
	// Unstable is the reason when the plan has not been the same for enough
	// ticks.
	Unstable Code = "unstable"
	// SmallGain is the reason when the plan gains less memory than
	// Settings.MinGainGB.
	SmallGain Code = "gain"
	// Interrupts is the reason when the plan interrupts an alias, so it is
	// left to be applied by hand.
	Interrupts Code = "interrupts"
	// Cooldown is the reason when the last apply was less than
	// Settings.Cooldown ago.
	Cooldown Code = "cooldown"
	// OverBudget is the reason when the plan would load more than the
	// hour's load budget allows.
	OverBudget Code = "budget"
)

// Decision is the verdict of a tick, with its reason.
type Decision struct {
	Verdict  Verdict
	Code     Code
	Reason   string
	Analysis Analysis
}

// Memory is what the controller remembers between ticks. The zero value
// is a controller that has done nothing yet.
type Memory struct {
	// Key is the last plan seen and Stable how many ticks in a row it was.
	Key    string
	Stable int
	// Applied says whether anything was applied (or advised), LastApply when.
	Applied   bool
	LastApply time.Duration
	// Loads are the weights applies loaded, for the hourly budget.
	Loads []Load
	// BackoffUntil holds applies back after the steps FailedSteps (IDs,
	// sorted) failed; NextBackoff is the wait after the next failure.
	BackoffUntil time.Duration
	NextBackoff  time.Duration
	FailedSteps  []string
	// AdvisedKey is the plan advised last (advise mode).
	AdvisedKey string
}

// Load is the weights an apply loaded, and when.
type Load struct {
	At time.Duration
	GB float64
}

// Decide makes the decision of one tick and returns the memory to keep.
func Decide(in Input, m Memory, s Settings) (Decision, Memory) {
	m.Loads = recent(m.Loads, in.Now)
	if len(in.Plan.Steps) == 0 {
		m.Key, m.Stable = "", 0
		return Decision{Verdict: Wait, Code: NoChanges, Reason: "the fleet matches the configuration"}, m
	}
	a := Analyze(in.Plan, in.Pool)
	d := Decision{Verdict: Wait, Analysis: a}
	wait := func(c Code, format string, args ...any) (Decision, Memory) {
		d.Code, d.Reason = c, fmt.Sprintf(format, args...)
		return d, m
	}
	if in.InProgress != nil {
		m.Key, m.Stable = "", 0
		if a.Urgent && !slices.Equal(in.Plan.After.Routes, in.InProgress.After.Routes) {
			return act(in, m, d, Preempt, "preempts the change in progress: "+a.Why)
		}
		return wait(InProgress, "a change is in progress")
	}
	if a.Key == m.Key {
		m.Stable++
	} else {
		m.Key, m.Stable = a.Key, 1
	}
	if in.Now < m.BackoffUntil && (!a.Urgent || retries(in.Plan, m.FailedSteps)) {
		return wait(BackingOff, "backing off after a failed apply until %s", m.BackoffUntil)
	}
	if in.Advise && a.Key == m.AdvisedKey {
		return wait(Advised, "this plan was advised at %s", m.LastApply)
	}
	if a.Urgent {
		return act(in, m, d, Urgent, a.Why)
	}
	need := s.StableTicks
	if a.ChangesResidency {
		need = s.ResidencyStableTicks
	}
	used := 0.0
	for _, l := range m.Loads {
		used += l.GB
	}
	switch {
	case m.Stable < need:
		return wait(Unstable, "the plan has been the same for %d of %d ticks", m.Stable, need)
	case a.GainGB < s.MinGainGB:
		return wait(SmallGain, "the plan gains %s, less than %s", pools.GB(a.GainGB), pools.GB(s.MinGainGB))
	case len(in.Plan.Interruptions) > 0:
		return wait(Interrupts, "the plan interrupts alias %s; apply it by hand", in.Plan.Interruptions[0].Alias)
	case m.Applied && in.Now-m.LastApply < s.Cooldown:
		return wait(Cooldown, "cooling down until %s", m.LastApply+s.Cooldown)
	case used > 0 && used+a.LoadGB > s.LoadBudgetGBPerHour:
		// A plan larger than the whole budget goes in an hour of its own.
		return wait(OverBudget, "the plan loads %s; %s of the hour's %s budget is used",
			pools.GB(a.LoadGB), pools.GB(used), pools.GB(s.LoadBudgetGBPerHour))
	}
	return act(in, m, d, Ready, fmt.Sprintf("stable for %s, gains %s, loads %s", plural.Count(m.Stable, "tick"), pools.GB(a.GainGB), pools.GB(a.LoadGB)))
}

// act applies (or advises) the plan and remembers it.
func act(in Input, m Memory, d Decision, c Code, reason string) (Decision, Memory) {
	d.Verdict, d.Code, d.Reason = Apply, c, reason
	if in.Advise {
		d.Verdict = Advise
		m.AdvisedKey = d.Analysis.Key
	}
	m.Applied, m.LastApply = true, in.Now
	m.Loads = append(slices.Clone(m.Loads), Load{At: in.Now, GB: d.Analysis.LoadGB})
	m.Key, m.Stable = "", 0
	return d, m
}

// recent keeps the loads of the last hour.
func recent(loads []Load, now time.Duration) []Load {
	i := 0
	for i < len(loads) && loads[i].At <= now-time.Hour {
		i++
	}
	return loads[i:]
}

// retries reports whether the plan has a step that failed.
func retries(p *pools.Plan, failed []string) bool {
	for _, s := range p.Steps {
		if _, found := slices.BinarySearch(failed, s.ID); found {
			return true
		}
	}
	return false
}

// Failed records that steps (IDs) of an apply failed at now, and returns
// the memory with the backoff it earns.
func (m Memory) Failed(steps []string, now time.Duration, s Settings) Memory {
	wait := m.NextBackoff
	if wait == 0 {
		wait = s.Backoff
	}
	m.BackoffUntil = now + wait
	m.FailedSteps = slices.Sorted(slices.Values(steps))
	m.NextBackoff = min(2*wait, s.MaxBackoff)
	return m
}

// Succeeded records an apply that carried out every step: the backoff
// starts over.
func (m Memory) Succeeded() Memory {
	m.NextBackoff, m.FailedSteps = 0, nil
	return m
}
