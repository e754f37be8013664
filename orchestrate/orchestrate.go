// Package orchestrate is what `poolc plan` and `poolc apply` do between
// reading their arguments and showing their results: lock the state,
// recover from an interrupted apply, start the pool's plugins, refresh
// the state from what they observe, check a saved plan, plan, gate
// interruptions, ask for confirmation and run the plan. Each operation
// takes a request and returns a response; the caller (the CLI) owns the
// arguments and the views.
package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"poolc.dev/poolc/compiler"
	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/journal"
	"poolc.dev/poolc/membership"
	"poolc.dev/poolc/plugins/host"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner"
	"poolc.dev/poolc/runner/store"
)

// Common are the settings plan and apply share.
type Common struct {
	// Config is the loaded, valid configuration.
	Config *compiler.Config
	// StatePath is the state file; "" means the pool's own.
	StatePath string
	// Refresh asks the plugins what they observe before planning.
	Refresh bool
	// Lock takes the state's lock for the operation (apply always does).
	Lock bool
	// LockTimeout is how long to wait for another operation's lock.
	LockTimeout time.Duration
	// ObserveTimeout bounds the refresh.
	ObserveTimeout time.Duration
	// Operation and Version go into the lock's info.
	Operation, Version string
	// Now stamps the plan.
	Now time.Time
	// Notice receives messages for the operator (a stale lock taken over,
	// an interrupted apply found); nil drops them.
	Notice func(string)
	// PluginOutput receives what plugins print; nil drops it.
	PluginOutput io.Writer
	// UnpinnedInside, when set, is the repository whose unpinned plugin
	// binaries are not run (host.Options.UnpinnedInside): plan sets it, so
	// planning a checkout runs none of its code, and a plugin it does not
	// start is an error, since what it serves cannot be observed.
	UnpinnedInside string
}

func (c *Common) notice(format string, args ...any) {
	if c.Notice != nil {
		c.Notice(fmt.Sprintf(format, args...))
	}
}

// session is what an operation holds while it runs: the store, its lock,
// the state read from it, the started plugins and what the refresh found.
type session struct {
	store       store.Backend
	lock        store.Unlocker
	state       *pools.State
	plugins     *host.Set
	drift       []host.Drift
	refreshed   bool // the refresh changed the state
	interrupted *journal.Interrupted
}

func (s *session) close() {
	if s.plugins != nil {
		s.plugins.Close()
	}
	if s.lock != nil {
		s.lock.Unlock()
	}
	if s.store != nil {
		s.store.Close()
	}
}

// Error is a failed operation: Diagnostics (with file:line:col attached
// where they concern the configuration) or a message.
type Error struct {
	Diagnostics pools.Diagnostics
	Err         error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Diagnostics.Err().Error()
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// open locks the state (when asked), reads it, starts the plugins and
// refreshes the state from them (when asked, or when the last apply was
// interrupted and recover says so). On error everything it took is
// released.
func (c *Common) open(ctx context.Context, recover bool) (*session, pools.Diagnostics, error) {
	b, err := OpenState(c.Config, c.StatePath)
	if err != nil {
		return nil, nil, err
	}
	s := &session{store: b}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	if c.Lock {
		lctx, cancel := context.WithTimeout(ctx, c.LockTimeout)
		lock, err := s.store.Acquire(lctx, store.NewLockInfo(c.Operation, c.Version), func(stale store.LockInfo) {
			c.notice("Took over a stale lock: %s; the process is gone.", stale)
		})
		cancel()
		if err != nil {
			return nil, nil, err
		}
		s.lock = lock
	}
	state, err := store.ReadPool(s.store, c.Config.Pool.Name)
	if err != nil {
		return nil, nil, err
	}
	state.Pool = c.Config.Pool.Name
	s.state = state
	if recover {
		if s.interrupted, err = s.store.LastApply(); err != nil {
			return nil, nil, fmt.Errorf("reading the journal: %v", err)
		}
		if s.interrupted != nil {
			c.notice("The last apply (%s) was interrupted with %s in flight; refreshing from the plugins before planning.", s.interrupted.Apply, plural.Count(len(s.interrupted.InFlight), "step"))
		}
	}
	set, diags := host.Start(ctx, c.Config.Pool, host.Options{WorkDir: c.Config.Dir(), Stderr: c.PluginOutput,
		Leaving: compiler.Leaving(c.Config, s.state), Left: s.state.Left(c.Config.Pool), UnpinnedInside: c.UnpinnedInside})
	if set != nil {
		if skipped := set.NotStarted(pools.Error, "what it serves cannot be observed"); len(skipped) > 0 {
			set.Close()
			diags = append(diags, skipped...)
		}
	}
	c.Config.Sources.Attach(diags)
	if diags.HasErrors() {
		return nil, diags, &Error{Diagnostics: diags}
	}
	s.plugins = set
	if c.Refresh || s.interrupted != nil {
		octx, cancel := context.WithTimeout(ctx, c.ObserveTimeout)
		obs, odiags := set.Observe(octx)
		cancel()
		c.Config.Sources.Attach(odiags)
		diags = append(diags, odiags...)
		if odiags.HasErrors() {
			return nil, diags, &Error{Diagnostics: odiags}
		}
		before := s.state.Fleet.Clone()
		s.drift = obs.Refresh(&s.state.Fleet)
		s.refreshed = len(s.drift) > 0 || !pools.SameProcesses(before, s.state.Fleet)
	}
	// Enrolled nodes' liveness comes from their agents' leases.
	if err := membership.MarkPool(ctx, s.state, c.Config.Pool, c.Config.Dir()); err != nil {
		return nil, diags, err
	}
	ok = true
	return s, diags, nil
}

// PlanRequest asks for a plan of the configuration from the state as the
// plugins see it.
type PlanRequest struct {
	Common
	// AssumeDown names nodes to treat as down.
	AssumeDown []string
	// Base, when set, is the configuration to plan from (its desired
	// state) instead of the state: what a pull request changes. No
	// state is read and no plugin started; Common's other settings than
	// Config and Now are not used.
	Base []string
}

// PlanResponse is a plan with what it was made from.
type PlanResponse struct {
	// State is the state planned from, refreshed when asked.
	State *pools.State
	Plan  *pools.Plan
	// Drift is what the refresh found different from the state file,
	// each with the plugin that saw it.
	Drift []host.Drift
	// Diagnostics are the warnings of the plugins, and those of
	// ObservedMemory: lanes that hold more memory than assumed.
	Diagnostics pools.Diagnostics
}

// Plan refreshes the state (unless asked not to) and plans. The state file
// is not written: a plan changes nothing. Holding the lock, it reads the
// journal as apply does: when the last apply was interrupted it refreshes
// in any case, and the plan lists the steps that may have run
// (Plan.MayHaveRun) that apply would report. Without the lock an apply may
// be under way, so its journal says nothing of an interruption.
func Plan(ctx context.Context, req PlanRequest) (*PlanResponse, error) {
	if len(req.Base) > 0 {
		return planFromBase(req)
	}
	s, diags, err := req.open(ctx, req.Lock)
	if err != nil {
		return nil, err
	}
	defer s.close()
	p, err := compiler.Plan(req.Config, s.state, compiler.PlanOptions{AssumeDown: req.AssumeDown, Now: req.Now})
	if err != nil {
		return nil, err
	}
	p.MayHaveRun = s.uncertain(p)
	diags = append(diags, req.observedMemory(s.state.Fleet)...)
	return &PlanResponse{State: s.state, Plan: p, Drift: s.drift, Diagnostics: diags}, nil
}

// planFromBase plans req's configuration from the desired state of the
// configuration at req.Base.
func planFromBase(req PlanRequest) (*PlanResponse, error) {
	base, diags := compiler.Load(req.Base)
	if diags.HasErrors() {
		return nil, errors.New("base configuration:\n" + diags.Err().Error())
	}
	current := compiler.Desired(base)
	p, err := compiler.Plan(req.Config, current, compiler.PlanOptions{AssumeDown: req.AssumeDown, Now: req.Now})
	if err != nil {
		return nil, err
	}
	return &PlanResponse{State: current, Plan: p}, nil
}

// ApplyRequest asks to take the fleet to the configuration.
type ApplyRequest struct {
	Common
	// Saved, when set, is the plan to carry out instead of planning; it
	// is refused when the configuration or the state changed since.
	Saved *pools.SavedPlan
	// AssumeDown names nodes to treat as down (a saved plan carries its
	// own).
	AssumeDown []string
	// AllowInterruption carries out a plan that leaves an alias unserved
	// for a while.
	AllowInterruption bool
	// Planned sees the plan before it is confirmed (to show it), also
	// when it is empty.
	Planned func(p *pools.Plan, drift []host.Drift)
	// Confirm is asked before a plan that was not saved runs; false
	// cancels. Nil approves.
	Confirm func(p *pools.Plan) bool
	// Run shapes the run.
	Run runner.Options
	// RetryUncertain sends again the steps that may have run (see
	// Uncertain); without it Apply refuses a plan that holds one.
	RetryUncertain bool
	// MayHaveRun sees the steps that may have run, before Apply refuses
	// the plan or, with RetryUncertain, sends them again; nil drops them.
	MayHaveRun func(steps []Uncertain, resent bool)
}

// Uncertain is a step that may have run (pools.MayHaveRun): an
// interrupted apply had sent it to a plugin and was killed before the
// answer, and the plugin does not observe the part of a fleet the step
// changes (host.StepPart), so the refresh cannot tell whether it did. A
// plugin that observes that part settles it by the refresh instead, and
// its step is never uncertain. A step the new plan no longer holds
// (Planned false) is only reported.
type Uncertain = pools.MayHaveRun

// UncertainError refuses a plan that would send again a step that may
// have run.
type UncertainError struct {
	// Apply is the interrupted apply's ID.
	Apply string
	// Steps are the uncertain steps the plan holds again.
	Steps []Uncertain
}

// Error implements error.
func (e *UncertainError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "refusing to send again %d steps that may have run: the last apply (%s) was killed while they were in flight, and their plugins do not observe whether they ran:", len(e.Steps), e.Apply)
	for _, u := range e.Steps {
		fmt.Fprintf(&b, "\n  %s (plugin %s does not observe %s)", u.Step, u.Plugin, u.Part)
	}
	b.WriteString("\nCheck each on its target: if it did not run, or running it twice is harmless, apply again with --retry-uncertain to send it again.")
	return b.String()
}

// uncertain lists the steps the interrupted apply had in flight that the
// refresh could not settle, in the order they started, each marked with
// whether plan holds it again.
func (s *session) uncertain(plan *pools.Plan) []Uncertain {
	if s.interrupted == nil {
		return nil
	}
	planned := map[string]bool{}
	for _, st := range plan.Steps {
		planned[st.ID] = true
	}
	var out []Uncertain
	for _, id := range s.interrupted.InFlight {
		kind, _, _ := strings.Cut(id, ":")
		part, plugin := host.StepPart(pools.StepKind(kind)), s.interrupted.Plugin[id]
		if s.plugins.Observes(plugin, part) {
			continue
		}
		out = append(out, Uncertain{Step: id, Plugin: plugin, Part: part, Planned: planned[id]})
	}
	return out
}

// ApplyResponse is what an apply did.
type ApplyResponse struct {
	Plan   *pools.Plan
	Drift  []host.Drift
	Result runner.Result
	// Ran says whether the plan ran (it had steps and was approved).
	Ran bool
	// Summary counts the outcomes of the steps.
	Summary string
	// Diagnostics are the warnings of the plugins.
	Diagnostics pools.Diagnostics
}

// ErrNotApproved is returned when Confirm declines the plan.
var ErrNotApproved = errors.New("cancelled: the answer was not yes")

// Apply locks the state, recovers from an interrupted apply, starts the
// plugins, refreshes, checks a saved plan or plans, gates interruptions,
// asks for confirmation and runs the plan, recording every step in the
// state and journal. Cancelling ctx stops new steps and cancels those in
// flight. A run whose steps did not all succeed is not an error: see
// Result.
func Apply(ctx context.Context, req ApplyRequest) (*ApplyResponse, error) {
	req.Lock = true
	s, diags, err := req.open(ctx, true)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if req.Saved != nil {
		// A target that cannot be observed (a host key that changed)
		// is named as such, not as a stale plan.
		if err := compiler.CheckUnobserved(s.state, req.Saved.AssumeDown); err != nil {
			return nil, err
		}
	}
	if req.Saved != nil && s.interrupted != nil {
		return nil, errors.New("saved plan is stale: the last apply was interrupted, so the state may not be what was planned against; plan again")
	}
	if s.refreshed && req.Saved == nil { // a saved plan is checked against it below
		if err := s.store.Write(s.state); err != nil {
			return nil, err
		}
	}
	plan := (*pools.Plan)(nil)
	if req.Saved != nil {
		if err := compiler.CheckSavedPlan(req.Config, s.state, req.Saved); err != nil {
			return nil, err
		}
		plan = req.Saved.Plan
	} else if plan, err = compiler.Plan(req.Config, s.state, compiler.PlanOptions{AssumeDown: req.AssumeDown, Now: req.Now}); err != nil {
		return nil, err
	}
	resp := &ApplyResponse{Plan: plan, Drift: s.drift, Diagnostics: diags}
	if req.Planned != nil {
		req.Planned(plan, s.drift)
	}
	if uncertain := s.uncertain(plan); len(uncertain) > 0 {
		if req.MayHaveRun != nil {
			req.MayHaveRun(uncertain, req.RetryUncertain)
		}
		var again []Uncertain
		for _, u := range uncertain {
			if u.Planned {
				again = append(again, u)
			}
		}
		if len(again) > 0 && !req.RetryUncertain {
			return nil, &UncertainError{Apply: s.interrupted.Apply, Steps: again}
		}
	}
	if plan.Empty() {
		if s.interrupted != nil {
			// The refresh settled what the interrupted apply left: close it.
			if j, err := s.store.BeginJournal(store.NewID()); err == nil {
				j.End("refreshed after an interrupted apply; nothing to do")
			}
		}
		return resp, nil
	}
	if len(plan.Interruptions) > 0 && !req.AllowInterruption {
		var which []string
		for _, in := range plan.Interruptions {
			which = append(which, fmt.Sprintf("%s for about %ss", in.Alias, pools.Num(in.Seconds)))
		}
		return nil, fmt.Errorf("refusing a plan that leaves %s unserved (%s); pass --allow-interruption to accept it", plural.Noun(len(which), "alias"), strings.Join(which, ", "))
	}
	if req.Saved == nil && req.Confirm != nil && !req.Confirm(plan) { // a saved plan was reviewed when it was made
		return nil, ErrNotApproved
	}
	// The plugin serving each target is on record before any step runs,
	// so what a step leaves there can be taken away through it after the
	// target has left the configuration.
	if s.state.RecordServed(req.Config.Pool) {
		if err := s.store.Write(s.state); err != nil {
			return nil, err
		}
	}
	journal, err := s.store.BeginJournal(store.NewID())
	if err != nil {
		return nil, err
	}
	s.state.Nodes = plan.After.Nodes
	rec := runner.NewStoreRecorder(journal, s.state)
	before := s.state.Fleet.Clone()
	res := runner.Run(ctx, plan, s.state, s.plugins.Steps(&before), rec, req.Run)
	resp.Result, resp.Ran = res, true
	resp.Summary = fmt.Sprintf("%d done, %d failed, %d skipped, %d cancelled", res.Count(runner.Done), res.Count(runner.Failed), res.Count(runner.Skipped), res.Count(runner.Cancelled))
	if err := journal.End(resp.Summary); err != nil {
		resp.Result.WriteErr = errors.Join(resp.Result.WriteErr, err)
	}
	return resp, nil
}
