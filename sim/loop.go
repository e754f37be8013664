package sim

import (
	"fmt"
	"strings"
	"time"

	"poolc.dev/poolc/compiler/place"
	"poolc.dev/poolc/compiler/plan"
	"poolc.dev/poolc/controller"
	"poolc.dev/poolc/internal/plural"
	"poolc.dev/poolc/pools"
	"poolc.dev/poolc/runner/schedule"
)

// loop is the controller running inside the simulation. Every tick it
// plans with the real placer and planner — from the configuration in
// force, the nodes whose lease lapsed, and the fleet it observes — and
// asks the controller what to do; in mode auto it carries the plan out in
// the model as the runner's schedule decides (execute.go). A tick takes no
// virtual time, so ticks never overlap; a change being carried out holds
// every later plan back unless an urgent one preempts it.
type loop struct {
	w        *world
	advise   bool
	interval time.Duration
	settings controller.Settings
	mem      controller.Memory

	// plan is the last plan, made from pool; made says from what state of
	// the world, so a tick where nothing changed reuses it.
	plan *pools.Plan
	pool *pools.Pool
	made struct {
		ok           bool
		version, cfg uint64
		down, warm   string
	}
	// rates are the lanes' request rates the last tick read from the
	// gateway's demand meter, and held the lanes demand held warm then
	// (controller.Warm).
	rates map[string]float64
	held  map[string]bool

	current  *execution // the change being carried out, or nil
	lastCode controller.Code
}

// epoch is the wall-clock time virtual time 0 stands for in plans.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newLoop(w *world) *loop {
	c := w.sc.Controller
	l := &loop{
		w: w, advise: w.opt.Mode == ModeAdvise, interval: secs(c.TickSeconds),
		settings: controller.Settings{
			StableTicks: c.StableTicks, ResidencyStableTicks: c.ResidencyStableTicks,
			MinGainGB: c.MinGainGB, Cooldown: secs(c.CooldownSeconds),
			LoadBudgetGBPerHour: c.LoadBudgetGBPerHour,
			Backoff:             secs(c.BackoffSeconds), MaxBackoff: maxBackoff,
			PromotePerMinute: c.PromotePerMinute, DemotePerMinute: c.DemotePerMinute,
		},
	}
	if l.interval <= w.end {
		w.at(l.interval, evTick, 0, 0)
	}
	return l
}

// maxBackoff caps the controller's backoff.
const maxBackoff = time.Hour

// tick is one look of the controller.
func (l *loop) tick() error {
	w := l.w
	if next := w.now + l.interval; next <= w.end {
		w.at(next, evTick, 0, 0)
	}
	downKey, down := w.leases.downSet()
	warm := l.warm()
	warmKey := strings.Join(warm, ",")
	version, cfg := w.fleet.changes(), w.op.changes()
	if !l.made.ok || l.made.version != version || l.made.cfg != cfg || l.made.down != downKey || l.made.warm != warmKey {
		pool := w.op.inForce(warm)
		current := w.fleet.observe(pool, down, w.routing.routes())
		placed := place.Place(place.Input{Pool: pool, Down: down})
		p, err := plan.Diff(plan.Input{Pool: pool, Placement: placed, Current: current, Now: epoch.Add(w.now)})
		if err != nil {
			return fmt.Errorf("planning at %s: %w", w.now, err)
		}
		l.plan, l.pool = p, pool
		l.made.ok, l.made.version, l.made.cfg, l.made.down, l.made.warm = true, version, cfg, downKey, warmKey
	}
	in := controller.Input{Now: w.now, Plan: l.plan, Pool: l.pool, Advise: l.advise}
	if l.current != nil {
		in.InProgress = l.current.plan
	}
	d, mem := controller.Decide(in, l.mem, l.settings)
	l.mem = mem
	code := l.lastCode
	l.lastCode = d.Code
	switch d.Verdict {
	case controller.Apply:
		return l.apply(d)
	case controller.Advise:
		w.stats.note(w.now, "plan-advised", l.plan.Summary()+"; "+d.Reason)
	default:
		switch d.Code {
		case controller.NoChanges, controller.InProgress, controller.Unstable, controller.Advised:
		default:
			if d.Code != code {
				w.stats.note(w.now, "hold", d.Reason)
			}
		}
	}
	return nil
}

// warm asks the controller which on-demand lanes demand holds warm, from
// the request rates of the aliases whose lane each is, and remembers the
// answer for the next tick.
func (l *loop) warm() []string {
	w := l.w
	pool := w.op.inForce(nil)
	if l.rates == nil {
		l.rates, l.held = map[string]float64{}, map[string]bool{}
	}
	clear(l.rates)
	for _, a := range pool.Aliases {
		if rate, ok := w.gw.demandFor(a.Name); ok {
			l.rates[a.Lane] += rate
		}
	}
	warm := controller.Warm(pool, l.rates, l.held, l.settings)
	clear(l.held)
	for _, name := range warm {
		l.held[name] = true
	}
	return warm
}

// demandReasons says which residency steps of the plan follow demand:
// lanes it holds warm, and lanes it lets go.
func (l *loop) demandReasons() string {
	var b strings.Builder
	for _, s := range l.plan.Steps {
		if !s.ChangesResidency() {
			continue
		}
		rate := l.rates[s.Lane.Name]
		switch {
		case s.Lane.Residency == pools.Preferred && l.held[s.Lane.Name]:
			fmt.Fprintf(&b, "; demand holds %s warm (%.2f requests/min)", s.Lane.Name, rate)
		case s.From == pools.Preferred && s.Lane.Residency == pools.OnDemand && rate < l.settings.DemotePerMinute:
			fmt.Fprintf(&b, "; demand for %s fell to %.2f requests/min", s.Lane.Name, rate)
		}
	}
	return b.String()
}

// apply carries out this tick's plan in the model, as the runner's
// schedule decides (execute.go).
func (l *loop) apply(d controller.Decision) error {
	w := l.w
	w.stats.Applies++
	if d.Code == controller.Preempt {
		w.stats.note(w.now, "preempt", "the change in progress stops taking new steps")
		w.exec.preempt(l.current)
	}
	w.stats.note(w.now, "apply", l.plan.Summary()+"; "+d.Reason+l.demandReasons())
	w.routing.setAliases(l.pool)
	l.current = nil
	x, err := w.exec.execute(l.plan)
	if err != nil {
		return err
	}
	if !x.done {
		l.current = x
	}
	return nil
}

// finished hears that an execution has carried out every step it could;
// a failure backs the controller off.
func (l *loop) finished(x *execution) {
	w := l.w
	if x == l.current {
		l.current = nil
	}
	done := 0
	for i := range x.steps {
		if x.m.Result(i).Outcome == schedule.Done {
			done++
		}
	}
	switch {
	case x.preempted:
		w.stats.note(w.now, "apply-done", fmt.Sprintf("%d of %s done before it was preempted", done, plural.Count(len(x.steps), "step")))
		return
	case len(x.failed) == 0:
		l.mem = l.mem.Succeeded()
		w.stats.note(w.now, "apply-done", plural.Count(done, "step")+" done")
		return
	}
	l.mem = l.mem.Failed(x.failed, w.now, l.settings)
	w.stats.note(w.now, "backoff", fmt.Sprintf("%d of %s failed; no apply retries %s before %s", len(x.failed), plural.Count(len(x.steps), "step"), plural.Agree(len(x.failed), "it", "them"), l.mem.BackoffUntil))
}
